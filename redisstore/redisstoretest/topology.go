package redisstoretest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NodeInfo is one line of CLUSTER NODES.
type NodeInfo struct {
	Addr   string
	Master bool
	Failed bool
	Slots  [][2]int // slot ranges served (masters)
}

// Topology reads CLUSTER NODES from the first live node.
func (c *Cluster) Topology(ctx context.Context) ([]NodeInfo, error) {
	var lastErr error
	for i, n := range c.Nodes {
		if !c.alive(i) {
			continue
		}
		txt, err := c.Do(ctx, n.Addr, "CLUSTER", "NODES").ToString()
		if err != nil {
			lastErr = err
			continue
		}
		var out []NodeInfo
		for _, line := range strings.Split(strings.TrimSpace(txt), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			ni := NodeInfo{Addr: addr, Master: strings.Contains(f[2], "master"), Failed: strings.Contains(f[2], "fail")}
			for _, r := range f[8:] {
				if strings.HasPrefix(r, "[") {
					continue // a slot in migration
				}
				lo, hi, ok := strings.Cut(r, "-")
				a, _ := strconv.Atoi(lo)
				b := a
				if ok {
					b, _ = strconv.Atoi(hi)
				}
				ni.Slots = append(ni.Slots, [2]int{a, b})
			}
			out = append(out, ni)
		}
		return out, nil
	}
	if lastErr == nil {
		lastErr = errors.New("no live node")
	}
	return nil, lastErr
}

// Masters returns the addresses of the live masters that serve slots.
func (c *Cluster) Masters(ctx context.Context) ([]string, error) {
	top, err := c.Topology(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range top {
		if n.Master && !n.Failed && len(n.Slots) > 0 {
			out = append(out, n.Addr)
		}
	}
	return out, nil
}

// MasterOf returns the index in Nodes of the master serving key's slot.
func (c *Cluster) MasterOf(ctx context.Context, key string) (int, error) {
	top, err := c.Topology(ctx)
	if err != nil {
		return 0, err
	}
	var slot int64 = -1
	for i, n := range c.Nodes {
		if c.alive(i) {
			if slot, err = c.Do(ctx, n.Addr, "CLUSTER", "KEYSLOT", key).AsInt64(); err == nil {
				break
			}
		}
	}
	if slot < 0 {
		return 0, fmt.Errorf("cluster keyslot: %v", err)
	}
	for _, n := range top {
		if !n.Master || n.Failed {
			continue
		}
		for _, r := range n.Slots {
			if int(slot) >= r[0] && int(slot) <= r[1] {
				for i, node := range c.Nodes {
					if node.Addr == n.Addr {
						return i, nil
					}
				}
			}
		}
	}
	return 0, fmt.Errorf("no master serves slot %d", slot)
}

// WaitOK waits until every live node reports cluster_state:ok with all
// 16384 slots served and knows every node, and every live replica's link
// to its master is up.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		last = c.notOK(ctx)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ok within %s: %s", timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// notOK says why the cluster is not ready, or "".
func (c *Cluster) notOK(ctx context.Context) string {
	for i, n := range c.Nodes {
		if !c.alive(i) {
			continue
		}
		info, err := c.Do(ctx, n.Addr, "CLUSTER", "INFO").ToString()
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:16384", "cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))} {
			if !strings.Contains(info, want+"\r\n") {
				return n.Addr + ": no " + want
			}
		}
		repl, err := c.Do(ctx, n.Addr, "INFO", "replication").ToString()
		if err != nil {
			return n.Addr + ": " + err.Error()
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return n.Addr + ": replica link down"
		}
	}
	return ""
}

// Flush empties every master (replicas follow) and waits for the cluster
// to be ok, so a test starts clean on a shared cluster.
func (c *Cluster) Flush(ctx context.Context) error {
	if err := c.WaitOK(30 * time.Second); err != nil {
		return err
	}
	masters, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	for _, m := range masters {
		if err := c.Do(ctx, m, "FLUSHALL").Error(); err != nil {
			return fmt.Errorf("flushall on %s: %w", m, err)
		}
	}
	return nil
}

// DBSize sums DBSIZE over the masters.
func (c *Cluster) DBSize(ctx context.Context) (int64, error) {
	masters, err := c.Masters(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, m := range masters {
		n, err := c.Do(ctx, m, "DBSIZE").AsInt64()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

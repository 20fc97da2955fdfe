package redisstoretest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// ClusterBackend is the subtest name of the Redis Cluster backend.
const ClusterBackend = "redis-cluster"

// NodeTimeout is the --cluster-node-timeout of every test cluster: short,
// so a failover takes about two seconds.
const NodeTimeout = 1000 * time.Millisecond

// Cluster is a real Redis Cluster on loopback: redis-server processes with
// --cluster-enabled yes joined by redis-cli --cluster create.
type Cluster struct {
	// Nodes in creation order: the first `masters` were created as masters
	// (a failover may promote a replica since).
	Nodes   []*Server
	masters int
	dir     string

	mu      sync.Mutex
	clients map[string]rueidis.Client // one single-node client per address
}

// ClusterAvailable reports whether redis-server and redis-cli are on PATH.
func ClusterAvailable() bool {
	_, err := exec.LookPath("redis-cli")
	return err == nil && RealAvailable()
}

func requireCluster(t testing.TB) {
	t.Helper()
	if !ClusterAvailable() {
		if RequireReal() {
			t.Fatal("REQUIRE_REAL_REDIS=1 but redis-server or redis-cli is not on PATH (apt-get install redis-server redis-tools)")
		}
		skip(t, "redis-server or redis-cli not on PATH (apt-get install redis-server redis-tools)")
	}
}

// NewCluster starts a cluster of masters with replicasPerMaster replicas
// each, waits until every node reports cluster_state:ok (and every replica
// is in sync), and stops it when the test ends.
func NewCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	requireCluster(t)
	c, err := StartCluster(t.TempDir(), masters, replicasPerMaster)
	if err != nil {
		t.Fatalf("start redis cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// StartCluster starts a cluster with its nodes under dir, without a test;
// the caller must Close it.
func StartCluster(dir string, masters, replicasPerMaster int) (*Cluster, error) {
	if masters < 3 {
		return nil, errors.New("redis cluster needs at least 3 masters")
	}
	c := &Cluster{masters: masters, dir: dir, clients: map[string]rueidis.Client{}}
	total := masters * (1 + replicasPerMaster)
	for i := range total {
		s, err := startNode(filepath.Join(dir, "node"+strconv.Itoa(i)))
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func startNode(dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 { // a free port can be taken between asking and binding
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		bus, err := FreePort()
		if err != nil {
			return nil, err
		}
		s, err := startIn(dir, port, []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout.Milliseconds())),
			"--cluster-port", strconv.Itoa(bus),
			// Any replica may take over however long its link was down,
			// and a replica syncs at once (no 5 s diskless delay).
			"--cluster-replica-validity-factor", "0",
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		})
		if err == nil {
			s.Backend = ClusterBackend
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// URL is the sidecar's REDIS_URL for the cluster: the first node, and every
// other as an addr= parameter.
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr
	}
	return u
}

// Options returns the sidecar's Redis options for the cluster.
func (c *Cluster) Options() redisstore.Options {
	return redisstore.Options{URL: c.URL(), Port: 6379, SSLCertReqs: "required"}
}

// Addrs are the addresses of every node.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Client returns a cluster-mode rueidis client for assertions.
func (c *Cluster) Client(t testing.TB) rueidis.Client {
	t.Helper()
	cl, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatalf("connect to cluster: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Kill stops node i at once (SIGKILL), as a crash would.
func (c *Cluster) Kill(i int) { c.Nodes[i].Kill() }

// Start restarts node i (it rejoins with its nodes.conf).
func (c *Cluster) Start(i int) error { return c.Nodes[i].Start() }

// node returns a single-node client of addr (kept for the cluster's life).
func (c *Cluster) node(addr string) (rueidis.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true,
		DisableRetry: true, ForceSingleClient: true, Dialer: net.Dialer{Timeout: 200 * time.Millisecond}})
	if err != nil {
		return nil, err
	}
	c.clients[addr] = cl
	return cl, nil
}

// Do runs one command on node addr.
func (c *Cluster) Do(ctx context.Context, addr string, args ...string) rueidis.RedisResult {
	cl, err := c.node(addr)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	return cl.Do(ctx, cl.B().Arbitrary(args...).Build())
}

// alive reports whether node i's process runs.
func (c *Cluster) alive(i int) bool {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

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

// Close stops every node and removes what StartCluster created.
func (c *Cluster) Close() {
	c.mu.Lock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = map[string]rueidis.Client{}
	c.mu.Unlock()
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// Server returns a view of the cluster as a test's Server: Backend
// ClusterBackend, Addr the first node, URL/Options/Client/Kill/Start for
// the whole cluster.
func (c *Cluster) Server(t testing.TB) *Server {
	return &Server{Backend: ClusterBackend, Addr: c.Nodes[0].Addr, Cluster: c, t: t, dir: c.dir}
}

// The package's shared cluster: started by the first test that asks for one
// in a package whose TestMain calls Main, flushed before every later test,
// stopped when Main returns. Starting a cluster takes a few seconds; a
// shared one keeps a package's cluster subtests to the cost of the tests.
var shared struct {
	mu    sync.Mutex
	main  bool
	c     *Cluster
	dir   string
	err   error
	tried bool
}

// Main runs the package's tests (from TestMain: os.Exit(Main(m))), prints
// one notice line naming the tests that skipped for want of redis-server, and
// stops the shared cluster if a test started it.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	printSkipNotice()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c != nil {
		shared.c.Close()
		shared.c = nil
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// NewClusterServer gives t a clean 3-master cluster: the package's shared one
// (flushed) when its TestMain calls Main, else one of its own.
func NewClusterServer(t testing.TB) *Server {
	t.Helper()
	requireCluster(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		return NewCluster(t, 3, 0).Server(t)
	}
	if !shared.tried {
		shared.tried = true
		shared.dir, shared.err = os.MkdirTemp("", "redisstoretest-cluster-")
		if shared.err == nil {
			shared.c, shared.err = StartCluster(shared.dir, 3, 0)
		}
	}
	if shared.err != nil {
		t.Fatalf("start shared redis cluster: %v", shared.err)
	}
	if err := shared.c.Flush(t.Context()); err != nil {
		t.Fatalf("flush shared redis cluster: %v", err)
	}
	return shared.c.Server(t)
}

// EachWithCluster is Each plus a third subtest on a 3-master Redis Cluster
// (NewClusterServer), for the suites that must hold on every backend the
// sidecar supports.
func EachWithCluster(t *testing.T, f func(t *testing.T, s *Server)) {
	t.Helper()
	Each(t, f)
	t.Run(ClusterBackend, func(t *testing.T) { f(t, NewClusterServer(t)) })
}

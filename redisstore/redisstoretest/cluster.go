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

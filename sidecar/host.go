package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Host assembles modules behind two listeners: the API (/v1, loopback by
// default) and ops (/metrics, /healthz, /readyz).
type Host struct {
	cfg      Config
	logger   *slog.Logger
	redis    *redisstore.Conn
	modules  []Module
	registry *prometheus.Registry
	shared   *sharedValues
	budget   *budget // the in-flight byte budget (budget.go)
	maxBody  int64   // the largest body limit of any route
	metrics  *httpMetrics
	paths    *http.ServeMux // every route's path, any method: labels 405s
	// streamRoutes holds the Stream routes' patterns: no in-flight slot
	streamRoutes *http.ServeMux
	api          http.Handler
	ops          *http.ServeMux

	// stopping is cancelled when shutdown begins: it ends every Stream
	// route at once, closes Deps.ShuttingDown (waits give up) and turns
	// new requests away (refuseWhenStopping).
	stopping  context.Context
	beginStop context.CancelFunc
	// cutoff is every API request's base context: cancelled with cause
	// ErrShuttingDown near the end of the drain, it ends the requests
	// still running so they answer instead of losing their connection.
	cutoff      context.Context
	cutRequests context.CancelCauseFunc
	active      atomic.Int64 // requests in a module's route, streams aside

	mu         sync.Mutex
	scriptPath string // the scripts' call path last logged (lua.Path)
	apiLn      net.Listener
	opsLn      net.Listener
	served     chan struct{} // closed once both listeners are bound
}

// NewHost builds every enabled module. If one fails, those already built are
// closed, so nothing leaks. The returned error names the module.
func NewHost(ctx context.Context, cfg Config, env envconf.Env, redis *redisstore.Conn, logger *slog.Logger, factories []Factory) (*Host, error) {
	h := &Host{
		cfg:      cfg,
		logger:   logger,
		redis:    redis,
		registry: NewRegistry(),
		shared:   &sharedValues{m: map[string]any{}},
		served:   make(chan struct{}),
		budget:   newBudget(budgetBytes(cfg.InflightBytes)),
	}
	h.stopping, h.beginStop = context.WithCancel(context.WithoutCancel(ctx))
	h.cutoff, h.cutRequests = context.WithCancelCause(context.WithoutCancel(ctx))
	h.metrics = newHTTPMetrics(h.registry)
	h.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sidecar_inflight_bytes",
		Help: "Bytes the requests being served hold, counted against the in-flight byte budget (SIDECAR_INFLIGHT_BYTES).",
	}, func() float64 { return float64(h.budget.inUse()) }))
	h.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sidecar_redis_up",
		Help: "1 when this sidecar's Redis connection answered its last check (every 0.5 s), else 0.",
	}, func() float64 {
		if redis.Up() {
			return 1
		}
		return 0
	}))
	mux := http.NewServeMux()
	h.paths = http.NewServeMux()
	h.streamRoutes = http.NewServeMux()
	for _, f := range factories {
		m, err := h.build(ctx, f, env, mux)
		if m != nil {
			h.modules = append(h.modules, m)
		}
		if err != nil {
			h.closeModules() // Caddy's rule: clean up after a failed provision
			return nil, err
		}
	}
	if h.maxBody*bodyCost > h.budget.limit {
		logger.Warn("the largest request body allowed does not fit the in-flight byte budget: bodies past it are refused 413",
			"max_body_bytes", h.maxBody, "fits_bytes", h.budget.limit/bodyCost, "inflight_bytes", h.budget.limit)
	}
	h.api = h.instrument(h.refuseWhenStopping(h.shedOverload(h.authenticate(h.gate(mux)))))
	h.ops = h.opsMux()
	return h, nil
}

func (h *Host) build(ctx context.Context, f Factory, env envconf.Env, mux *http.ServeMux) (m Module, err error) {
	logger := h.logger.With("module", f.Name)
	m, err = f.New(ctx, Deps{Redis: h.redis, Logger: logger, Env: env, Registerer: h.registry, RequestTimeout: h.cfg.RequestTimeout,
		Limits: h.cfg.Limits, ShuttingDown: h.stopping.Done(), shared: h.shared})
	if err != nil {
		var confErr *envconf.Error
		if errors.As(err, &confErr) {
			return nil, err // already names the variable
		}
		return nil, fmt.Errorf("module %s: %w", f.Name, err)
	}
	// From here on m is returned with any error, so the caller closes it.
	if c, ok := m.(Collector); ok {
		for _, col := range c.Collectors() {
			if err := h.registry.Register(col); err != nil {
				return m, fmt.Errorf("module %s: register metrics: %w", f.Name, err)
			}
		}
	}
	for _, rt := range m.Routes() {
		h.maxBody = max(h.maxBody, rt.MaxBodyBytes, h.cfg.MaxBodyBytes)
		if err := handle(mux, rt.Pattern, h.route(rt, logger)); err != nil {
			return m, fmt.Errorf("module %s: route %q: %w", f.Name, rt.Pattern, err)
		}
		if rt.Stream {
			_ = handle(h.streamRoutes, rt.Pattern, http.NotFoundHandler())
		}
		h.metrics.known(rt.Pattern)
		h.knownPath(rt.Pattern)
	}
	return m, nil
}

// handle registers a pattern, turning ServeMux's panic on a conflicting or
// malformed pattern into an error.
func handle(mux *http.ServeMux, pattern string, hd http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	mux.Handle(pattern, hd)
	return nil
}

// Registry is the sidecar's metrics registry.
func (h *Host) Registry() *prometheus.Registry { return h.registry }

// APIHandler serves /v1 with all middleware, for tests and embedding.
func (h *Host) APIHandler() http.Handler { return h.api }

// OpsHandler serves /metrics, /healthz and /readyz.
func (h *Host) OpsHandler() http.Handler { return h.ops }

// Addrs returns the bound API and ops addresses once Run has bound them.
func (h *Host) Addrs() (api, ops string) {
	<-h.served
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.apiLn.Addr().String(), h.opsLn.Addr().String()
}

// Run binds both listeners and serves until ctx is cancelled (then shuts down
// gracefully and returns nil), or until Redis stayed unreachable for
// SIDECAR_STARTUP_TIMEOUT (then returns an error).
func (h *Host) Run(ctx context.Context) error {
	apiLn, err := net.Listen("tcp", h.cfg.ListenAddr)
	if err != nil {
		// The modules' goroutines stop before the process closes Redis
		// under them, so none reports its connection lost on the way out.
		h.closeModules()
		return envconf.Invalid("SIDECAR_LISTEN_ADDR", "%v", err)
	}
	opsLn, err := net.Listen("tcp", h.cfg.OpsAddr)
	if err != nil {
		apiLn.Close()
		h.closeModules()
		return envconf.Invalid("SIDECAR_OPS_ADDR", "%v", err)
	}
	h.mu.Lock()
	h.apiLn, h.opsLn = apiLn, opsLn
	h.mu.Unlock()
	close(h.served)

	maxConns := h.cfg.MaxConnections
	if maxConns == 0 {
		maxConns = defaultMaxConnections()
	}
	limited := newLimitListener(apiLn, maxConns)
	errLog := slog.NewLogLogger(h.logger.Handler(), slog.LevelWarn)
	headerTimeout := min(10*time.Second, h.cfg.ReadTimeout)
	apiSrv := &http.Server{Handler: h.api, ReadHeaderTimeout: headerTimeout, ReadTimeout: h.cfg.ReadTimeout, WriteTimeout: h.cfg.WriteTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: errLog, ConnState: limited.connState, ConnContext: withConn,
		BaseContext: func(net.Listener) context.Context { return h.cutoff }}
	opsSrv := &http.Server{Handler: h.ops, ReadHeaderTimeout: headerTimeout, ReadTimeout: h.cfg.ReadTimeout, WriteTimeout: h.cfg.WriteTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: errLog}
	serveErr := make(chan error, 2)
	go func() { serveErr <- serve(apiSrv, limited) }()
	go func() { serveErr <- serve(opsSrv, opsLn) }()
	h.logger.Info("listening", "api", apiLn.Addr().String(), "ops", opsLn.Addr().String(), "max_api_connections", maxConns,
		"inflight_bytes", h.budget.limit)

	var runErr error
	startup := time.NewTimer(h.cfg.StartupTimeout)
	defer startup.Stop()
	select {
	case <-h.redis.Ready():
		h.logger.Info("ready", "modules", h.moduleNames())
		h.loadScripts(ctx)
		select {
		case <-ctx.Done():
		case runErr = <-serveErr:
		}
	case <-ctx.Done():
	case runErr = <-serveErr:
	case <-startup.C:
		runErr = fmt.Errorf("redis %s not reachable within SIDECAR_STARTUP_TIMEOUT (%s): %s",
			h.cfg.Redis.Redacted(), h.cfg.StartupTimeout, h.redis.LastError())
	}

	h.drain(ctx, limited, apiSrv, opsSrv)
	h.closeModules()
	return runErr
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (h *Host) moduleNames() string {
	names := make([]string, len(h.modules))
	for i, m := range h.modules {
		names[i] = m.Name()
	}
	return strings.Join(names, ",")
}

// knownPath adds pattern's path, without its method, to h.paths with a
// handler that is never called: pathPattern only asks which path pattern
// matches, the route label of a 405 ("/v1/locks/{name}").
func (h *Host) knownPath(pattern string) {
	_, p, ok := strings.Cut(pattern, " ")
	if !ok {
		p = pattern
	}
	_ = handle(h.paths, p, http.NotFoundHandler()) // several methods share one path
}

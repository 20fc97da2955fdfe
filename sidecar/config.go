package sidecar

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Config is the host's configuration (README.md "Configuration"). Each module parses its
// own variables itself (SESSION_TTL_SECONDS and the like) from Deps.Env;
// the settings several modules share are Limits, read here once.
type Config struct {
	Redis  redisstore.Options
	Limits Limits

	ListenAddr     string        `env:"SIDECAR_LISTEN_ADDR" envDefault:"127.0.0.1:7480"`
	OpsAddr        string        `env:"SIDECAR_OPS_ADDR" envDefault:":9464"`
	Modules        string        `env:"SIDECAR_MODULES" envDefault:"all"`
	APIToken       string        `env:"SIDECAR_API_TOKEN"`
	MaxBodyBytes   int64         `env:"SIDECAR_MAX_BODY_BYTES" envDefault:"1048576"`
	StartupTimeout time.Duration `env:"SIDECAR_STARTUP_TIMEOUT" envDefault:"60s"`
	RequestTimeout time.Duration `env:"SIDECAR_REQUEST_TIMEOUT" envDefault:"10s"`
	// ReadTimeout bounds reading a request's headers and body; WriteTimeout
	// writing its answer. A route that waits on purpose (a lock wait)
	// extends both by its own timeout.
	ReadTimeout  time.Duration `env:"SIDECAR_READ_TIMEOUT" envDefault:"30s"`
	WriteTimeout time.Duration `env:"SIDECAR_WRITE_TIMEOUT" envDefault:"30s"`
	// MaxConnections caps concurrent API connections (0: derived from the
	// process's file limit, RLIMIT_NOFILE); MaxInflight caps requests being
	// served at once (past it: 503 overloaded).
	MaxConnections int `env:"SIDECAR_MAX_CONNECTIONS" envDefault:"0"`
	MaxInflight    int `env:"SIDECAR_MAX_INFLIGHT" envDefault:"256"`
	// InflightBytes is the in-flight byte budget: the bytes the requests
	// being served may hold at once, request bodies and answers (0: half
	// the memory limit, GOMEMLIMIT or the container's; 512 MiB without
	// one). Past it: 503 overloaded.
	InflightBytes int64  `env:"SIDECAR_INFLIGHT_BYTES" envDefault:"0"`
	LogLevel      string `env:"LOG_LEVEL" envDefault:"info"`
	LogFormat     string `env:"LOG_FORMAT" envDefault:"json"`
}

// ShutdownGrace is how long in-flight requests may run after SIGTERM.
const ShutdownGrace = 10 * time.Second

// LoadConfig parses and validates the host configuration from env. Every
// mistake is an *envconf.Error naming the variable.
func LoadConfig(env envconf.Env) (Config, error) { return envconf.Load[Config](env) }

// Validate checks values that parse but make no sense.
func (c Config) Validate() error {
	if err := checkListenAddr(c.ListenAddr); err != nil {
		return envconf.Invalid("SIDECAR_LISTEN_ADDR", "%v", err)
	}
	if err := checkListenAddr(c.OpsAddr); err != nil {
		return envconf.Invalid("SIDECAR_OPS_ADDR", "%v", err)
	}
	if c.MaxBodyBytes < 1 {
		return envconf.Invalid("SIDECAR_MAX_BODY_BYTES", "must be at least 1")
	}
	if c.StartupTimeout <= 0 {
		return envconf.Invalid("SIDECAR_STARTUP_TIMEOUT", "must be positive")
	}
	if c.RequestTimeout <= 0 {
		return envconf.Invalid("SIDECAR_REQUEST_TIMEOUT", "must be positive")
	}
	if c.ReadTimeout <= 0 {
		return envconf.Invalid("SIDECAR_READ_TIMEOUT", "must be positive")
	}
	if c.WriteTimeout <= 0 {
		return envconf.Invalid("SIDECAR_WRITE_TIMEOUT", "must be positive")
	}
	if c.MaxConnections < 0 {
		return envconf.Invalid("SIDECAR_MAX_CONNECTIONS", "must be 0 (from the file limit) or more, not %d", c.MaxConnections)
	}
	if c.MaxInflight < 1 {
		return envconf.Invalid("SIDECAR_MAX_INFLIGHT", "must be at least 1, not %d", c.MaxInflight)
	}
	if c.InflightBytes < 0 {
		return envconf.Invalid("SIDECAR_INFLIGHT_BYTES", "must be 0 (from the memory limit) or more, not %d", c.InflightBytes)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return envconf.Invalid("LOG_LEVEL", "%v", err)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		return envconf.Invalid("LOG_FORMAT", "%q is not json or text", c.LogFormat)
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	return c.Redis.Validate()
}

func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is out of range 0-65535", port)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("%q is not debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger builds the process logger from LOG_LEVEL and LOG_FORMAT.
func NewLogger(w io.Writer, c Config) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

package sidecar

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Main is the sidecar process with the given modules: it reads the
// environment, serves until SIGTERM or SIGINT and returns the exit code: 0
// after a graceful stop, 1 for bad configuration or a Redis that stayed
// unreachable past SIDECAR_STARTUP_TIMEOUT (one line on stderr says why), 2
// for command-line arguments (it takes none but --version). cmd/sidecar
// calls it with the stock modules; a build with modules of its own calls it
// with its own list (see examples/).
func Main(factories []Factory) int {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		version, revision := BuildVersion()
		fmt.Printf("sidecar %s (revision %s, %s)\n", version, revision, runtime.Version())
		return 0
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "sidecar takes no arguments (configuration is environment variables; see README.md), only --version")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := Run(ctx, envconf.FromOS(), os.Stderr, factories)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidecar:", err)
		return 1
	}
	return 0
}

// Run is the whole process: config → logger → Redis → modules → serve. It
// returns nil after a graceful shutdown (ctx cancelled by SIGTERM/SIGINT)
// and an error, printed as one line by Main, for bad configuration or a
// Redis that stayed unreachable for SIDECAR_STARTUP_TIMEOUT.
func Run(ctx context.Context, env envconf.Env, logOut io.Writer, factories []Factory) error {
	cfg, err := LoadConfig(env)
	if err != nil {
		return err
	}
	enabled, err := Select(factories, cfg.Modules)
	if err != nil {
		return err
	}
	logger := NewLogger(logOut, cfg)
	setMemoryLimit(logger, os.Getenv) // the runtime reads GOMEMLIMIT from the process, not from env
	version, _ := BuildVersion()
	logger.Info("starting", "version", version, "redis", cfg.Redis.Redacted())

	redis, err := redisstore.Open(cfg.Redis, logger)
	if err != nil {
		return err
	}
	defer redis.Close()

	host, err := NewHost(ctx, cfg, env, redis, logger, enabled)
	if err != nil {
		return err
	}
	if err := host.Run(ctx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

package main

import (
	"context"
	"io"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// run is the whole process: config → logger → Redis → modules → serve. It
// returns nil after a graceful shutdown (ctx cancelled by SIGTERM/SIGINT) and
// an error, printed as one line by main, for bad configuration or a Redis
// that stayed unreachable for SIDECAR_STARTUP_TIMEOUT.
func run(ctx context.Context, env envconf.Env, logOut io.Writer) error {
	cfg, err := sidecar.LoadConfig(env)
	if err != nil {
		return err
	}
	enabled, err := sidecar.Select(modules, cfg.Modules)
	if err != nil {
		return err
	}
	logger := sidecar.NewLogger(logOut, cfg)
	version, _ := sidecar.BuildVersion()
	logger.Info("starting", "version", version, "redis", cfg.Redis.Redacted())

	redis, err := redisstore.Open(cfg.Redis, logger)
	if err != nil {
		return err
	}
	defer redis.Close()

	host, err := sidecar.NewHost(ctx, cfg, env, redis, logger, enabled)
	if err != nil {
		return err
	}
	return host.Run(ctx)
}

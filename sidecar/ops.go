package sidecar

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/openapi"
)

// opsMux serves the kubelet and Prometheus.
func (h *Host) opsMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := h.Ready(r.Context()); err != nil {
			WriteError(w, Errorf(http.StatusServiceUnavailable, "not_ready", "%v", err))
			return
		}
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.JSON())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.registry, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(h.logger.Handler(), slog.LevelWarn),
		Registry:          h.registry,
		EnableOpenMetrics: true,
	}))
	return mux
}

// ReadyTimeout bounds the readiness check: Redis must answer within it.
const ReadyTimeout = time.Second

// Ready reports why the sidecar cannot serve, or nil: Redis must answer PING
// within a second, accept every script (SCRIPT LOAD on each node), and every
// module's own check must pass.
func (h *Host) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := h.redis.Ping(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	client, err := h.redis.Client()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if err := lua.Load(ctx, client); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	for _, m := range h.modules {
		if c, ok := m.(Checker); ok {
			if err := c.Check(ctx); err != nil {
				return fmt.Errorf("module %s: %w", m.Name(), err)
			}
		}
	}
	return nil
}

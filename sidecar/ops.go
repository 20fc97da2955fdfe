package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/openapi"
	"github.com/agentsidecar/agentsidecar/redisstore"
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

// Ready reports why the sidecar cannot serve, or nil: it must not be
// shutting down, Redis must answer PING within a second, accept every
// script (SCRIPT LOAD on each node) and not have refused a call within the
// last redisstore.RefusalWindow (a full Redis still answers PING), and
// every module's own check must pass. The
// reason is a sentence for a person with no address in it; the detail goes
// to the log.
func (h *Host) Ready(ctx context.Context) error {
	if h.stopping.Err() != nil {
		return errors.New("the sidecar is shutting down")
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	select {
	case <-h.redis.Ready():
	default:
		return errors.New("Redis is not reachable yet (the sidecar keeps retrying; the log says why)")
	}
	err := h.redis.Ping(ctx)
	if err == nil {
		var client rueidis.Client
		if client, err = h.redis.Client(); err == nil {
			if err = lua.Load(ctx, client); err != nil {
				err = fmt.Errorf("load scripts: %w", err)
			} else {
				h.noteScriptPath(client)
			}
		}
	}
	if err != nil {
		h.logger.Debug("not ready", "err", err)
		return errors.New(redisReason(err))
	}
	if r, ok := h.redis.RecentRefusal(); ok {
		return errors.New(r.Message)
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

// loadScripts loads the function libraries once Redis is first reachable
// (readiness loads every script on each check), so the log says at start
// which call path the scripts take.
func (h *Host) loadScripts(ctx context.Context) {
	client, err := h.redis.Client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := lua.LoadFunctions(ctx, client); err != nil {
		h.logger.Debug("load scripts", "err", err)
		return
	}
	h.noteScriptPath(client)
}

// noteScriptPath logs the scripts' call path (lua.Path: Redis Functions,
// or EVALSHA and why) when it differs from the last one logged: at start,
// and when a new Redis client (after an outage) or a refusal changes it.
func (h *Host) noteScriptPath(c rueidis.Client) {
	p := lua.Path(c)
	h.mu.Lock()
	changed := p != h.scriptPath
	h.scriptPath = p
	h.mu.Unlock()
	if !changed {
		return
	}
	if h.redis.Embedded() != nil && strings.HasPrefix(p, "evalsha") {
		// The embedded Redis has no Redis Functions: EVALSHA is the path it
		// is meant to take, not a refusal to report.
		h.logger.Info("redis scripts", "path", "evalsha", "why", "the embedded Redis has no Redis Functions")
		h.logger.Debug("redis scripts", "path", p)
		return
	}
	h.logger.Info("redis scripts", "path", p)
}

// redisReason says in a sentence why Redis could not serve a check.
func redisReason(err error) string {
	if r, ok := redisstore.Refused(err); ok {
		return r.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("Redis did not answer within %s", ReadyTimeout)
	}
	return "Redis is unavailable (connection failed; the log says why)"
}

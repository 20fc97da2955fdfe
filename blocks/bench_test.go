package blocks_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The blocks routes over HTTP on a real host and a real redis-server:
// an append to a block of 1 KiB vs 30 KiB (the script splices the stored
// JSON: its cost grows with the block, bounded by BLOCKS_MAX_CONTENT_BYTES),
// the system prompt of 32 blocks of 1 KiB rendered live vs frozen, and a
// set_context tool call. redis-µs/call is Redis's own time per script
// call (INFO commandstats); a frozen prompt runs no script (one HMGET).
//
//	go test -run '^$' -bench . -benchtime 2s ./blocks/
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1 << 10, 30 << 10} {
		b.Run(fmt.Sprintf("block=%dKiB", size>>10), func(b *testing.B) {
			h, srv := benchHost(b)
			put(b, h, "/v1/users/alice/sessions/s1/blocks/log", strings.Repeat("word ", size/5))
			c := sidecartest.NewClient(b, h.API)
			resetStats(b, srv)
			for b.Loop() {
				if rep := c.Send(b.Context(), "POST", "/v1/users/alice/sessions/s1/blocks/log/append", `{"content":"x"}`); rep.Status != 200 {
					b.Fatalf("append: %d %s", rep.Status, rep.Body)
				}
			}
			reportScriptTime(b, srv)
		})
	}
}

func BenchmarkSystemPrompt(b *testing.B) {
	for _, q := range []string{"", "?frozen=true"} {
		name := "live"
		if q != "" {
			name = "frozen"
		}
		b.Run(name+"/blocks=32x1KiB", func(b *testing.B) {
			h, srv := benchHost(b)
			for i := range 16 {
				put(b, h, fmt.Sprintf("/v1/users/alice/blocks/u%d", i), strings.Repeat("fact ", 200))
				put(b, h, fmt.Sprintf("/v1/users/alice/sessions/s1/blocks/s%d", i), strings.Repeat("task ", 200))
			}
			c := sidecartest.NewClient(b, h.API)
			c.Send(b.Context(), "GET", "/v1/users/alice/sessions/s1/system-prompt"+q, "") // frozen: the one freeze
			resetStats(b, srv)
			for b.Loop() {
				if rep := c.Send(b.Context(), "GET", "/v1/users/alice/sessions/s1/system-prompt"+q, ""); rep.Status != 200 || len(rep.Body) < 32<<10 {
					b.Fatalf("prompt: %d, %d bytes", rep.Status, len(rep.Body))
				}
			}
			reportScriptTime(b, srv)
		})
	}
}

func BenchmarkSetContext(b *testing.B) {
	h, srv := benchHost(b)
	put(b, h, "/v1/users/alice/sessions/s1/blocks/memory", "likes tea")
	c := sidecartest.NewClient(b, h.API)
	resetStats(b, srv)
	i := 0
	for b.Loop() {
		i++
		body := fmt.Sprintf(`{"arguments":"{\"label\":\"memory\",\"content\":\"likes tea %d\"}","tool_call_id":"call_%d"}`, i, i)
		if rep := c.Send(b.Context(), "POST", "/v1/users/alice/sessions/s1/tools/set_context", body); rep.Status != 200 || strings.Contains(rep.Body, `"is_error":true`) {
			b.Fatalf("set_context: %d %s", rep.Status, rep.Body)
		}
	}
	reportScriptTime(b, srv)
}

// resetStats zeroes Redis's command statistics.
func resetStats(b *testing.B, srv *redisstoretest.Server) {
	b.Helper()
	c := srv.Client(b)
	if err := c.Do(b.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
}

// reportScriptTime reports Redis's own time per script call (FCALL's or
// EVALSHA's usec_per_call in INFO commandstats) since resetStats.
func reportScriptTime(b *testing.B, srv *redisstoretest.Server) {
	b.Helper()
	c := srv.Client(b)
	info, err := c.Do(b.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:")
		if !ok {
			rest, ok = strings.CutPrefix(line, "cmdstat_fcall:")
		}
		if ok {
			for kv := range strings.SplitSeq(strings.TrimSpace(rest), ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					f, _ := strconv.ParseFloat(v, 64)
					b.ReportMetric(f, "redis-µs/call")
				}
			}
		}
	}
}

func benchHost(b *testing.B) (*sidecartest.Host, *redisstoretest.Server) {
	b.Helper()
	srv := redisstoretest.NewReal(b)
	return start(b, srv, envconf.Env{"BLOCKS_MAX_CONTENT_BYTES": "262144"}), srv
}

func put(b *testing.B, h *sidecartest.Host, path, content string) {
	b.Helper()
	body, _ := json.Marshal(map[string]string{"content": content})
	if rep := h.Do(b, "PUT", path, string(body)); rep.Status != 201 {
		b.Fatalf("PUT %s: %d %s", path, rep.Status, rep.Body)
	}
}

// The tool definitions through GET .../tools and through MCP's tools/list,
// and a set_context call through each: what an MCP exchange (the go-sdk's
// session per request, its JSON-RPC decoding) costs over the REST route.
func BenchmarkToolsRESTvsMCP(b *testing.B) {
	const s = "/v1/users/alice/sessions/s1"
	for _, c := range []struct{ name, method, path, body string }{
		{"list/rest", "GET", s + "/tools", ""},
		{"list/mcp", "POST", s + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"call/rest", "POST", s + "/tools/set_context", `{"arguments":{"label":"memory","content":"likes tea"}}`},
		{"call/mcp", "POST", s + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set_context","arguments":{"label":"memory","content":"likes tea"}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			h, _ := benchHost(b)
			put(b, h, s+"/blocks/memory", "likes coffee")
			cl := sidecartest.NewClient(b, h.API)
			for b.Loop() {
				if rep := cl.Send(b.Context(), c.method, c.path, c.body); rep.Status != 200 || strings.Contains(rep.Body, `"error"`) {
					b.Fatalf("%s: %d %s", c.name, rep.Status, rep.Body)
				}
			}
		})
	}
}

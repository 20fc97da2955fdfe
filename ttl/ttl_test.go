package ttl_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

// PUT answers the TTL as GET then reports it: ttl_seconds 0 (never expires)
// reads back as -1, GET's "no expiry", and a bad body says what is accepted.
func TestPutAnswersAsGetReports(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory)
		const s = "/v1/users/u1/sessions/s1"
		if r := h.Do(t, "POST", s+"/entries", `{"question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		tests := []struct {
			name, method, body string
			status             int
			want               string
		}{
			{"own TTL", "PUT", `{"ttl_seconds":3600}`, 200, `{"ttl_seconds":3600}`},
			{"0 = never expires, answered as -1", "PUT", `{"ttl_seconds":0}`, 200, `{"ttl_seconds":-1}`},
			{"GET reports -1 too", "GET", "", 200, `{"ttl_seconds":-1}`},
			{"negative", "PUT", `{"ttl_seconds":-1}`, 400, `"field \"ttl_seconds\" must be from 0 (no expiry) to `},
			{"unknown field names the accepted one", "PUT", `{"ttl":5}`, 400, `"unknown field \"ttl\"; accepted fields: ttl_seconds"`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := h.Do(t, tc.method, s+"/ttl", tc.body)
				if r.Status != tc.status || !strings.Contains(strings.TrimSpace(r.Body), tc.want) {
					t.Fatalf("%s %s: got %d %s, want %d with %s", tc.method, tc.body, r.Status, r.Body, tc.status, tc.want)
				}
			})
		}
	})
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The raw client against net/http's server: Content-Length and chunked
// bodies, no body, keep-alive reuse and the server closing.
func TestRawClient(t *testing.T) {
	big := strings.Repeat("x", 10000) // over net/http's buffer: sent chunked
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		case "/big":
			_, _ = w.Write([]byte(big))
		case "/none":
			w.WriteHeader(http.StatusNoContent)
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte("bye"))
		}
	}))
	defer srv.Close()
	c, err := newRawClient(srv.URL, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx := context.Background()
	for range 2 {
		for _, tc := range []struct {
			method, path, body string
			status             int
			want               string
		}{
			{"POST", "/echo", `{"a":1}`, 201, `{"a":1}`},
			{"GET", "/big", "", 200, big},
			{"DELETE", "/none", "", 204, ""},
			{"GET", "/close", "", 200, "bye"},
			{"PUT", "/echo", "", 201, ""},
		} {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			status, out, err := c.do(ctx, 0, tc.method, tc.path, body)
			if err != nil || status != tc.status || string(out) != tc.want {
				t.Errorf("%s %s: %d %.40q %v, want %d %.40q", tc.method, tc.path, status, out, err, tc.status, tc.want)
			}
		}
	}
}

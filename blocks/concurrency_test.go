package blocks_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// Sixteen appenders on two sidecars lose no append: every piece is in the
// block exactly once, each appender's in its order, and the tokens are the
// estimate of the whole content.
func TestConcurrentAppends(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		const appenders, each = 16, 20
		for _, path := range []string{"/v1/users/alice/blocks/log", "/v1/users/alice/sessions/s1/blocks/log"} {
			wantBlock(t, hosts[0].Do(t, "PUT", path, `{"content":""}`), 201)
			var wg sync.WaitGroup
			errs := make(chan string, appenders*each)
			for a := range appenders {
				wg.Go(func() {
					c := sidecartest.NewClient(t, hosts[a%2].API)
					for i := range each {
						rep := c.Send(t.Context(), "POST", path+"/append", fmt.Sprintf(`{"content":"<%d.%d> "}`, a, i))
						if rep.Status != 200 {
							errs <- fmt.Sprintf("appender %d: %d %s", a, rep.Status, rep.Body)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			got := wantBlock(t, hosts[1].Do(t, "GET", path, ""), 200)
			for a := range appenders {
				last := -1
				for i := range each {
					piece := fmt.Sprintf("<%d.%d> ", a, i)
					if n := strings.Count(got.Content, piece); n != 1 {
						t.Fatalf("%s: piece %q found %d times", path, piece, n)
					}
					at := strings.Index(got.Content, piece)
					if at < last {
						t.Fatalf("%s: appender %d's pieces out of order", path, a)
					}
					last = at
				}
			}
			if got.Tokens != tokens.Estimate(got.Content) {
				t.Errorf("%s: tokens %d, want the estimate %d", path, got.Tokens, tokens.Estimate(got.Content))
			}
		}
	})
}

// The script's token count of an appended block (the stored counts
// combined with each piece's) is tokens.Estimate of the whole content,
// whatever the pieces: spaces at the seams, Unicode spaces, CJK, escapes.
func TestAppendTokensMatchEstimate(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		alphabet := []string{"a", "bc", " ", "  ", "\n", "\t", "\u00a0", "\u3000", "日本", "é", "\"", "\\", "/", "<&>", "x y", "\u2028"}
		rng := rand.New(rand.NewPCG(1, 2))
		for b := range 5 {
			path := fmt.Sprintf("/v1/users/alice/sessions/s1/blocks/b%d", b)
			wantBlock(t, h.Do(t, "PUT", path, `{"content":"start"}`), 201)
			content := "start"
			for range 30 {
				var piece strings.Builder
				for range rng.IntN(4) {
					piece.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				body, _ := json.Marshal(map[string]string{"content": piece.String()})
				got := wantBlock(t, h.Do(t, "POST", path+"/append", string(body)), 200)
				content += piece.String()
				if got.Content != content || got.Tokens != tokens.Estimate(content) {
					t.Fatalf("after appending %q: content %q, tokens %d; want %q, %d", piece.String(), got.Content, got.Tokens, content, tokens.Estimate(content))
				}
			}
		}
	})
}

// Many first calls of ?frozen=true at once, from two sidecars, freeze one
// prompt: every answer is that prompt with the same frozen_at.
func TestConcurrentFreeze(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		wantBlock(t, hosts[0].Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/m", `{"content":"x"}`), 201)
		const callers = 16
		got := make([]string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				rep := sidecartest.NewClient(t, hosts[i%2].API).Send(t.Context(), "GET", "/v1/users/alice/sessions/s1/system-prompt?frozen=true&format=json", "")
				got[i] = fmt.Sprintf("%d %s", rep.Status, rep.Body)
			})
		}
		wg.Wait()
		for i := range got {
			if got[i] != got[0] || !strings.HasPrefix(got[0], "200 ") || !strings.Contains(got[0], `"frozen_at":"`) {
				t.Fatalf("answer %d: %s; answer 0: %s", i, got[i], got[0])
			}
		}
	})
}

// A refresh never stores a rendering older than one a refresh already
// stored: one writer puts v1, v2, ... in order while four refreshers run,
// and a reader of the frozen prompt never sees the version go back.
func TestRefreshNeverGoesBack(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		const path = "/v1/users/alice/sessions/s1"
		wantBlock(t, hosts[0].Do(t, "PUT", path+"/blocks/v", `{"content":"v0"}`), 201)
		version := func(prompt string) int {
			var n int
			fmt.Sscanf(prompt[strings.LastIndex(prompt, "\n")+1:], "v%d", &n)
			return n
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(done)
			c := sidecartest.NewClient(t, hosts[0].API)
			for i := 1; i <= 60; i++ {
				if rep := c.Send(t.Context(), "PUT", path+"/blocks/v", fmt.Sprintf(`{"content":"v%d"}`, i)); rep.Status != 200 {
					t.Errorf("put v%d: %d %s", i, rep.Status, rep.Body)
					return
				}
			}
		})
		for r := range 4 {
			wg.Go(func() {
				c := sidecartest.NewClient(t, hosts[r%2].API)
				for {
					select {
					case <-done:
						return
					default:
					}
					if rep := c.Send(t.Context(), "POST", path+"/system-prompt/refresh", ""); rep.Status != 200 && rep.Code() != "blocks_busy" {
						t.Errorf("refresh: %d %s", rep.Status, rep.Body)
						return
					}
				}
			})
		}
		wg.Go(func() {
			c := sidecartest.NewClient(t, hosts[1].API)
			last := -1
			for {
				select {
				case <-done:
					return
				default:
				}
				rep := c.Send(t.Context(), "GET", path+"/system-prompt?frozen=true", "")
				if v := version(rep.Body); rep.Status != 200 || v < last {
					t.Errorf("frozen prompt went from v%d to v%d (%d)", last, v, rep.Status)
					return
				} else {
					last = v
				}
			}
		})
		wg.Wait()
	})
}

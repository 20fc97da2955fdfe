package messages_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// toolOutputs is an append of n tool outputs of an SDK turn, each an item
// of exactly size bytes.
func toolOutputs(n, size int) string {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		head := fmt.Sprintf(`{"type":"function_call_result","callId":"c%06d","output":"`, i)
		item := head + strings.Repeat("x", size-len(head)-2) + `"}`
		fmt.Fprintf(&b, `{"role":"tool","format":"openai.responses","item":%s}`, item)
	}
	b.WriteString(`]}`)
	return b.String()
}

// The sizes a framework's turn needs: 1 000 messages in one append (a
// staged append: open, ten puts, the commit), items of 1 MiB, bodies of 8 MiB on message writes while every
// other route keeps SIDECAR_MAX_BODY_BYTES; past each, the refusal names
// the bound and nothing is written.
func TestFrameworkTurnSizes(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)

	resetStats(t, c)
	if r := h.Do(t, "POST", "/v1/users/alice/sessions/wide/messages", toolOutputs(1000, 200)); r.Status != 201 {
		t.Fatalf("1 000 messages in one append: %s", r)
	}
	if got := calls(t, c, "evalsha") + calls(t, c, "fcall"); got != 2+1000/messages.StageMessages {
		t.Errorf("1 000 messages took %d scripts, want %d", got, 2+1000/messages.StageMessages)
	}
	if p := pathOf(t, h, "wide", "limit=1"); p.Total != 1000 {
		t.Errorf("stored %d messages, want 1000", p.Total)
	}
	r := h.Do(t, "POST", "/v1/users/alice/sessions/wide2/messages", toolOutputs(1001, 200))
	if r.Status != 400 || !strings.Contains(r.Body, "1 to 1000 messages") {
		t.Errorf("1 001 messages: %s, want 400 naming 1 to 1000", r)
	}

	if r := h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", toolOutputs(1, 1<<20)); r.Status != 201 {
		t.Fatalf("an item of 1 MiB: %s", r)
	}
	r = h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", toolOutputs(1, 1<<20+1))
	if r.Status != 400 || !strings.Contains(r.Body, "SESSION_MAX_ITEM_BYTES") {
		t.Errorf("an item of 1 MiB + 1: %s, want 400 naming SESSION_MAX_ITEM_BYTES", r)
	}
	eight := toolOutputs(8, 1_040_000)
	if len(eight) > 8<<20 || len(eight) < 8_000_000 {
		t.Fatalf("the 8 MiB body is %d bytes", len(eight))
	}
	if r := h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", eight); r.Status != 201 {
		t.Fatalf("an 8 MiB append: %d %s", r.Status, r.Code())
	}
	r = h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", toolOutputs(9, 1_000_000))
	if r.Status != 413 || r.Code() != "body_too_large" {
		t.Errorf("a 9 MB append: %d %s, want 413 body_too_large", r.Status, r.Code())
	}
	if p := pathOf(t, h, "big", "limit=1"); p.Total != 9 {
		t.Errorf("session big holds %d messages, want 9 (the refused appends wrote nothing)", p.Total)
	}
	// a Q&A entry keeps SIDECAR_MAX_BODY_BYTES (1 MiB)
	entry, _ := json.Marshal(map[string]string{"question": "q", "answer": strings.Repeat("a", 1100_000)})
	if r := h.Do(t, "POST", "/v1/users/alice/sessions/big/entries", string(entry)); r.Status != 413 {
		t.Errorf("a 1.1 MB Q&A entry: %d, want 413", r.Status)
	}
}

// Both bounds are settings.
func TestFrameworkSizesAreSettings(t *testing.T) {
	h := start(t, redisstoretest.New(t), envconf.Env{"SESSION_MAX_ITEM_BYTES": "4096", "SIDECAR_MAX_MESSAGE_BODY_BYTES": "65536"})
	if r := h.Do(t, "POST", "/v1/users/alice/sessions/s/messages", toolOutputs(1, 4096)); r.Status != 201 {
		t.Fatalf("an item of 4096 bytes: %s", r)
	}
	if r := h.Do(t, "POST", "/v1/users/alice/sessions/s/messages", toolOutputs(1, 4097)); r.Status != 400 {
		t.Errorf("an item of 4097 bytes: %s, want 400", r)
	}
	if r := h.Do(t, "POST", "/v1/users/alice/sessions/s/messages", toolOutputs(20, 4000)); r.Status != 413 {
		t.Errorf("an 80 kB body: %d, want 413", r.Status)
	}
	for _, env := range []envconf.Env{
		{"SESSION_MAX_ITEM_BYTES": "100"},
		{"SESSION_MAX_ITEM_BYTES": "2000000", "SIDECAR_MAX_MESSAGE_BODY_BYTES": "1000000"},
		{"SIDECAR_MAX_MESSAGE_BODY_BYTES": "1000"},
	} {
		_, err := sidecar.LoadConfig(env) // shared limits: read by the host
		if err == nil || !strings.Contains(err.Error(), "_BYTES: ") {
			t.Errorf("%v: %v, want an error naming the setting", env, err)
		}
	}
}

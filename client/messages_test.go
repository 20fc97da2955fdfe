package client_test

import (
	"context"
	"testing"

	"github.com/agentsidecar/agentsidecar/client"
)

// everyMessageOperation calls every messages method on the live sidecar
// and checks the answers (TestEveryOperation).
func everyMessageOperation(t *testing.T, ctx context.Context, c *client.Client, u string) {
	t.Helper()
	const s = "msgs"
	m1 := must(c.AppendMessage(ctx, u, s, client.MessageInput{ID: "m1", Role: "user", Content: new("Where is the dog?"),
		Item: []byte(`{"text": "Where is the dog?"}`), Format: new("test.v1")}, client.WithIdempotencyKey("a1"))).ok(t)
	if !m1.Created || m1.ParentID != nil || m1.Tokens != 15 || string(m1.Item) != `{"text":"Where is the dog?"}` {
		t.Fatalf("AppendMessage: %+v", m1)
	}
	if again := must(c.AppendMessage(ctx, u, s, client.MessageInput{Role: "user"}, client.WithIdempotencyKey("a1"))).ok(t); again.Created || again.ID != "m1" {
		t.Fatalf("retried AppendMessage: %+v", again)
	}
	batch := must(c.AppendMessages(ctx, u, s, []client.MessageInput{
		{ID: "m2", Role: "assistant", Content: new("In the garden")},
		{ID: "m3", Role: "user", Content: new("Thanks")},
	}, client.IfLeaf("m1"))).ok(t)
	if len(batch) != 2 || !batch[0].Created || *batch[0].ParentID != "m1" || *batch[1].ParentID != "m2" {
		t.Fatalf("AppendMessages: %+v", batch)
	}
	_, err := c.AppendMessage(ctx, u, s, client.MessageInput{Role: "user"}, client.IfLeaf("m1"))
	wantErr(t, err, 412, "leaf_moved")
	// a history transaction, on a session of its own: applied, then its
	// retry answers the first result, then a stale suffix changes nothing
	tx := client.MessageTransaction{OperationID: "op1", Type: "append_items", Messages: []client.MessageInput{
		{ID: "t1", Role: "user", Content: new("hi")}, {ID: "t2", Role: "assistant", Content: new("hello")}}}
	if r := must(c.ApplyMessageTransaction(ctx, u, "tx", tx)).ok(t); !r.Applied || len(r.Messages) != 2 || r.Messages[1].ID != "t2" {
		t.Fatalf("ApplyMessageTransaction: %+v", r)
	}
	if r := must(c.ApplyMessageTransaction(ctx, u, "tx", tx)).ok(t); r.Applied || r.OperationID != "op1" || len(r.Messages) != 2 {
		t.Fatalf("retried ApplyMessageTransaction: %+v", r)
	}
	_, err = c.ApplyMessageTransaction(ctx, u, "tx", client.MessageTransaction{OperationID: "op2", Type: "replace_suffix",
		ExpectedSuffix: []client.MessageInput{{Role: "assistant", Content: new("not this")}}, Messages: []client.MessageInput{}})
	wantErr(t, err, 409, "suffix_mismatch")
	alt := must(c.AppendMessage(ctx, u, s, client.MessageInput{ID: "m2b", Role: "assistant", ParentID: client.Set("m1")})).ok(t)
	if *alt.ParentID != "m1" {
		t.Fatalf("branch: %+v", alt)
	}
	p := must(c.ListMessages(ctx, u, s, client.PathOptions{Leaf: "m3", Limit: 2})).ok(t)
	if len(p.Messages) != 2 || p.Messages[0].ID != "m1" || p.Total != 3 || p.NextCursor == nil || *p.NextCursor != "m2" {
		t.Fatalf("ListMessages: %+v", p)
	}
	if p := must(c.ListMessages(ctx, u, s, client.PathOptions{Leaf: "m3", After: "m2"})).ok(t); len(p.Messages) != 1 || p.Messages[0].ID != "m3" || p.NextCursor != nil {
		t.Fatalf("ListMessages after m2: %+v", p)
	}
	if g := must(c.GetMessage(ctx, u, s, "m2")).ok(t); *g.Content != "In the garden" {
		t.Fatalf("GetMessage: %+v", g)
	}
	if k := must(c.ListChildren(ctx, u, s, "m1")).ok(t); len(k) != 2 || k[0].ID != "m2" || k[1].ID != "m2b" {
		t.Fatalf("ListChildren: %+v", k)
	}
	if put := must(c.PutMessage(ctx, u, s, "m3", client.MessageInput{Role: "user", Content: new("Thank you")})).ok(t); put.Created || *put.Content != "Thank you" || *put.ParentID != "m2" {
		t.Fatalf("PutMessage: %+v", put)
	}
	if pm := must(c.PatchMessage(ctx, u, s, "m3", client.MessagePatch{Metadata: client.Set(map[string]any{"lang": "en"})})).ok(t); pm.Metadata["lang"] != "en" || *pm.Content != "Thank you" {
		t.Fatalf("PatchMessage: %+v", pm)
	}
	if pop := must(c.PopMessage(ctx, u, s)).ok(t); pop.ID != "m2b" {
		t.Fatalf("PopMessage: %+v", pop)
	}
	cp := must(c.CreateCompaction(ctx, u, s, client.CompactionRequest{Summary: "asked and answered", FromID: "m1", ToID: "m2"})).ok(t)
	if l := must(c.ListCompactions(ctx, u, s)).ok(t); len(l) != 1 || l[0].ID != cp.ID || l[0].FromID != "m1" {
		t.Fatalf("ListCompactions: %+v", l)
	}
	if p := must(c.ListMessages(ctx, u, s, client.PathOptions{Leaf: "m3"})).ok(t); len(p.Messages) != 2 || p.Messages[0].Compaction.ID != cp.ID || p.Messages[1].ID != "m3" {
		t.Fatalf("ListMessages with the overlay: %+v", p)
	}
	if p := must(c.ListMessages(ctx, u, s, client.PathOptions{Leaf: "m3", Raw: true})).ok(t); len(p.Messages) != 3 {
		t.Fatalf("ListMessages raw: %+v", p)
	}
	// the message, then the user's Q&A entry q1 (written above) that
	// also asks about a dog
	if hits := must(c.SearchUser(ctx, u, "dogs", 0)).ok(t); len(hits) != 2 || hits[0].ID != "m1" || hits[0].SessionID != s || hits[1].Kind != "entry" || hits[1].ID != "q1" {
		t.Fatalf("SearchUser: %+v", hits)
	}
	if hits := must(c.SearchRelevant(ctx, u, s, "garden", 5)).ok(t); len(hits) != 1 || hits[0].ID != "m2" {
		t.Fatalf("SearchRelevant: %+v", hits)
	}
	f := must(c.ForkSession(ctx, u, s, client.ForkSessionRequest{At: "m2", Title: new("fork")}, client.WithIdempotencyKey("f1"))).ok(t)
	if !f.Created || *f.ParentSessionID != s || f.MessageCount != 2 {
		t.Fatalf("ForkSession: %+v", f)
	}
	if again := must(c.ForkSession(ctx, u, s, client.ForkSessionRequest{At: "m2"}, client.WithIdempotencyKey("f1"))).ok(t); again.Created || again.SessionID != f.SessionID {
		t.Fatalf("retried ForkSession: %+v", again)
	}
	sp := must(c.SplitSession(ctx, u, f.SessionID, client.SplitSessionRequest{Summary: "dog found", SessionID: f.SessionID + "-2"})).ok(t)
	if !sp.Created || *sp.ParentSessionID != f.SessionID || sp.MessageCount != 1 {
		t.Fatalf("SplitSession: %+v", sp)
	}
	mustNil(t, c.DeleteSession(ctx, u, f.SessionID))
	mustNil(t, c.DeleteSession(ctx, u, sp.SessionID))
	wantErr(t, c.DeleteMessage(ctx, u, s, "m1", false), 409, "has_children")
	mustNil(t, c.DeleteMessage(ctx, u, s, "m2", true))
	mustNil(t, c.ClearMessages(ctx, u, s))
	_, err = c.PopMessage(ctx, u, s)
	wantErr(t, err, 404, "not_found")
	mustNil(t, c.DeleteSession(ctx, u, s))
}

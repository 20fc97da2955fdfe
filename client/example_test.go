package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsidecar/agentsidecar/client"
)

// The examples run against the real sidecar TestMain starts; in a pod the
// URL is "http://127.0.0.1:7480".

// Append entries to a session and read them back.
func Example() {
	ctx := context.Background()
	c := client.New(sidecarURL)                    // client.WithBearerToken(os.Getenv("SIDECAR_API_TOKEN")) when set
	_ = c.DeleteSession(ctx, "ex-alice", "chat-1") // start afresh

	res, err := c.AppendEntry(ctx, "ex-alice", "chat-1", client.AppendEntryRequest{
		QAID: "q1", Question: "Where is the dog?", Answer: "In the garden",
	})
	if err != nil {
		fmt.Println("append:", err)
		return
	}
	fmt.Println("stored", res.QAID, "created:", res.Created)

	// A retry with the same qa_id stores nothing and answers the stored entry.
	res, _ = c.AppendEntry(ctx, "ex-alice", "chat-1", client.AppendEntryRequest{
		QAID: "q1", Question: "Where is the dog?", Answer: "In the garden",
	})
	fmt.Println("retried", res.QAID, "created:", res.Created)

	_, _ = c.AppendEntry(ctx, "ex-alice", "chat-1", client.AppendEntryRequest{
		QAID: "q2", Question: "And the cat?", Answer: "On the roof", Context: "garden photos",
	})
	entries, _ := c.ListEntries(ctx, "ex-alice", "chat-1", 10)
	for _, e := range entries {
		fmt.Printf("%s: %s -> %s\n", e.QAID, e.Question, e.Answer)
	}
	hits, _ := c.SearchEntries(ctx, "ex-alice", "chat-1", "garden cat", 5)
	fmt.Println("search 'garden cat':", len(hits), "hit,", hits[0].QAID)

	_, err = c.GetEntry(ctx, "ex-alice", "chat-1", "nope")
	fmt.Println("missing entry is not found:", client.IsNotFound(err))
	// Output:
	// stored q1 created: true
	// retried q1 created: false
	// q1: Where is the dog? -> In the garden
	// q2: And the cat? -> On the roof
	// search 'garden cat': 1 hit, q2
	// missing entry is not found: true
}

// Feedback on an entry, a partial update, and clearing the feedback.
func ExampleClient_SetFeedback() {
	ctx := context.Background()
	c := client.New(sidecarURL)
	_ = c.DeleteSession(ctx, "ex-bob", "chat-1") // start afresh
	_, _ = c.AppendEntry(ctx, "ex-bob", "chat-1", client.AppendEntryRequest{QAID: "q1", Question: "2+2?", Answer: "4"})

	e, err := c.SetFeedback(ctx, "ex-bob", "chat-1", "q1", client.FeedbackRequest{
		FeedbackScore: client.Set(5), FeedbackText: client.Set("spot on"),
	})
	if err != nil {
		fmt.Println("feedback:", err)
		return
	}
	fmt.Println("score", *e.FeedbackScore, "text", *e.FeedbackText)

	// Absent fields stay as they are; memify_metadata merges key-wise.
	e, _ = c.UpdateEntry(ctx, "ex-bob", "chat-1", "q1", client.UpdateEntryRequest{
		MemifyMetadata: client.Set(map[string]any{"feedback_weights_applied": true}),
		FeedbackText:   client.Null[string](),
	})
	fmt.Println("score", *e.FeedbackScore, "text", e.FeedbackText, "memify", e.MemifyMetadata)

	e, _ = c.ClearFeedback(ctx, "ex-bob", "chat-1", "q1")
	fmt.Println("cleared:", e.FeedbackScore == nil && e.FeedbackText == nil)

	_, err = c.SetFeedback(ctx, "ex-bob", "chat-1", "nope", client.FeedbackRequest{FeedbackScore: client.Set(1)})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code)
	}
	// Output:
	// score 5 text spot on
	// score 5 text <nil> memify map[feedback_weights_applied:true]
	// cleared: true
	// 404 not_found
}

// Count LLM calls in a session, retry one safely, and end the session.
func ExampleClient_RecordUsage() {
	ctx := context.Background()
	c := client.New(sidecarURL)
	_ = c.DeleteSession(ctx, "ex-carol", "run-1") // start afresh

	in, out := int64(1200), int64(300)
	u, err := c.RecordUsage(ctx, "ex-carol", "run-1", client.UsageRequest{
		Model: "gpt-4o-mini-2024-07-18", TokensIn: &in, TokensOut: &out,
	}, client.WithIdempotencyKey("call-1"))
	if err != nil {
		fmt.Println("usage:", err)
		return
	}
	fmt.Printf("created %v: %d+%d tokens priced as %s (%s)\n", u.Created, u.TokensIn, u.TokensOut, *u.PricedAs, u.CostSource)

	// The same key again (a retry after a timeout, say) counts nothing.
	u, _ = c.RecordUsage(ctx, "ex-carol", "run-1", client.UsageRequest{
		Model: "gpt-4o-mini-2024-07-18", TokensIn: &in, TokensOut: &out,
	}, client.WithIdempotencyKey("call-1"))
	fmt.Println("retry created:", u.Created)

	// No counts: estimated from the text, len(text) // 4.
	u, _ = c.RecordUsage(ctx, "ex-carol", "run-1", client.UsageRequest{
		Model: "my-local-model", InputText: "What is the capital of France?", OutputText: "Paris",
	})
	fmt.Printf("estimated %v: %d+%d tokens, cost source %s\n", u.TokensEstimated, u.TokensIn, u.TokensOut, u.CostSource)

	rec, _ := c.CompleteSession(ctx, "ex-carol", "run-1")
	fmt.Println(rec.Status, "calls", rec.Calls, "tokens", rec.TokensIn, rec.TokensOut, "models", len(rec.Models), "last", *rec.LastModel)

	_, err = c.FailSession(ctx, "ex-carol", "run-1")
	fmt.Println("fail after complete:", client.IsConflict(err), errors.Is(err, client.ErrSessionEnded))
	// Output:
	// created true: 1200+300 tokens priced as gpt-4o-mini (price_table)
	// retry created: false
	// estimated true: 7+1 tokens, cost source unknown_model
	// completed calls 2 tokens 1207 301 models 2 last my-local-model
	// fail after complete: true true
}

// Page through a user's sessions: by hand with NextCursor, or with the
// iterator that follows it.
func ExampleClient_AllUserSessions() {
	ctx := context.Background()
	c := client.New(sidecarURL)
	for _, s := range []string{"s1", "s2", "s3", "s4", "s5"} {
		_ = c.DeleteSession(ctx, "ex-dave", s) // start afresh
		_, _ = c.AppendEntry(ctx, "ex-dave", s, client.AppendEntryRequest{Question: "hi", Answer: "hello"})
	}
	_, _ = c.CompleteSession(ctx, "ex-dave", "s2")

	page, _ := c.ListUserSessions(ctx, "ex-dave", client.ListSessionsOptions{Limit: 2})
	for page != nil {
		for _, s := range page.Sessions {
			fmt.Print(s.SessionID, " ")
		}
		fmt.Println("| more:", page.NextCursor != "")
		if page.NextCursor == "" {
			break
		}
		page, _ = c.ListUserSessions(ctx, "ex-dave", client.ListSessionsOptions{Limit: 2, Cursor: page.NextCursor})
	}

	for rec, err := range c.AllUserSessions(ctx, "ex-dave", client.ListSessionsOptions{Status: client.StatusRunning, Limit: 2}) {
		if err != nil {
			fmt.Println("list:", err)
			return
		}
		fmt.Print(rec.SessionID, ":", rec.Status, " ")
	}
	fmt.Println()
	// Output:
	// s2 s5 | more: true
	// s4 s3 | more: true
	// s1 | more: false
	// s5:running s4:running s3:running s1:running
}

// A lock held by a lease that refreshes itself until released.
func ExampleClient_Acquire() {
	ctx := context.Background()
	c := client.New(sidecarURL)

	lease, err := c.Acquire(ctx, "ex-graph-writes", client.LeaseOptions{Owner: "worker-1", TTL: 10 * time.Second})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("worker-1 holds the lock, fencing token", lease.Fence > 0)

	// Another worker does not get it while the lease lives.
	_, err = c.Acquire(ctx, "ex-graph-writes", client.LeaseOptions{Owner: "worker-2", Wait: 100 * time.Millisecond})
	fmt.Println("worker-2 held off:", errors.Is(err, client.ErrHeld))

	info, _ := c.InspectLock(ctx, "ex-graph-writes")
	fmt.Println("held:", info.Held, "by", info.Owner)

	// Work under the lease: this context ends, with cause ErrLost, if the
	// lease is lost.
	work, cancel := lease.Context(ctx)
	_ = work // pass work and lease.Fence to the protected resource
	cancel()

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	lease2, err := c.Acquire(ctx, "ex-graph-writes", client.LeaseOptions{Owner: "worker-2"})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	defer lease2.Release(ctx)
	fmt.Println("worker-2 holds it now, with a higher fencing token:", lease2.Fence > lease.Fence)
	// Output:
	// worker-1 holds the lock, fencing token true
	// worker-2 held off: true
	// held: true by worker-1
	// worker-2 holds it now, with a higher fencing token: true
}

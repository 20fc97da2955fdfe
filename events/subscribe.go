package events

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// subscribeBatch bounds the channels one SUBSCRIBE or UNSUBSCRIBE names.
const subscribeBatch = 256

// subscribe owns the sidecar's one Pub/Sub connection until ctx ends. The
// connection holds exactly the channels of the watched streams
// (redisstore.EventsChannel of each key of h.streams): a stream's first
// watcher on this sidecar subscribes its channel, its last one leaving
// unsubscribes it. Only this goroutine talks to the connection: it diffs
// what is watched against what it subscribed whenever a watch is made or
// dropped (h.changed), so a last watcher leaving while a new one arrives
// cannot leave a watched stream unsubscribed: whatever the order, the
// next diff sees the stream watched.
//
// The connection is opened when the first stream is watched and then kept,
// subscribed to nothing while nothing is watched: an idle connection costs
// Redis nothing per write (no channel of it is published to), while
// closing it with the last watcher would cost a new connection's handshake
// (TCP, HELLO, AUTH) for every stream opened after a quiet spell. A sidecar
// that never serves a stream opens none. A lost connection is made again
// with jittered backoff (only once something is watched), every watched
// channel subscribed again and every watched stream read again.
func (h *hub) subscribe(ctx context.Context) {
	select {
	case <-h.redis.Ready():
	case <-ctx.Done():
		return
	}
	delay := 100 * time.Millisecond
	for {
		if !h.awaitWatched(ctx) {
			return
		}
		start := time.Now()
		err := h.subscribed(ctx)
		if ctx.Err() != nil {
			return
		}
		h.pokeAll()
		if time.Since(start) > 10*time.Second {
			delay = 100 * time.Millisecond
		}
		h.logger.Warn("event subscription lost; readers fall back to the heartbeat re-read until it returns",
			"channels", redisstore.EventsChannelPrefix+"*", "err", err, "retry_in", delay.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay/2 + rand.N(delay/2+1)):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// awaitWatched waits until a stream is watched; false when ctx ended.
func (h *hub) awaitWatched(ctx context.Context) bool {
	for {
		if h.watched() > 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-h.resub:
		}
	}
}

// subscribed runs one Pub/Sub connection until it is lost (its error) or
// ctx ends.
func (h *hub) subscribed(ctx context.Context) error {
	c, err := h.redis.Client()
	if err != nil {
		return err
	}
	// A connection of its own: a RESP2 server (or miniredis) refuses other
	// commands on a subscribed connection. Each channel Redis confirms has
	// its stream read: an event written before then (between the stream's
	// first read and the confirmation, or while the subscription was down)
	// woke nobody.
	dc, _ := c.Dedicate()
	defer dc.Close() // never back to the pool: it may still be subscribed
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(msg rueidis.PubSubMessage) { h.poke(streamOf(msg.Channel)) },
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				h.poke(streamOf(s.Channel))
			}
		},
	})
	on := map[string]bool{} // the streams whose channel this connection subscribed
	for full := true; ; full = false {
		add, drop := h.diff(on, full)
		if err := h.send(ctx, dc, add, true); err != nil {
			return err
		}
		if err := h.send(ctx, dc, drop, false); err != nil {
			return err
		}
		for _, k := range add {
			on[k] = true
		}
		for _, k := range drop {
			delete(on, k)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-lost:
			return err
		case <-h.resub:
		}
	}
}

// diff returns the streams to subscribe (watched, not in on) and to
// unsubscribe (in on, no longer watched): of every stream with full (a new
// connection), else of those whose watch changed since the last diff.
func (h *hub) diff(on map[string]bool, full bool) (add, drop []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	check := func(k string) {
		_, watched := h.streams[k]
		switch {
		case watched && !on[k]:
			add = append(add, k)
		case !watched && on[k]:
			drop = append(drop, k)
		}
	}
	if full {
		for k := range h.streams {
			check(k)
		}
		for k := range on {
			check(k)
		}
	} else {
		for k := range h.changed {
			check(k)
		}
	}
	clear(h.changed)
	return add, drop
}

// send subscribes (or unsubscribes) the channels of keys, subscribeBatch
// channels per command.
func (h *hub) send(ctx context.Context, dc rueidis.DedicatedClient, keys []string, sub bool) error {
	for from := 0; from < len(keys); from += subscribeBatch {
		batch := keys[from:min(from+subscribeBatch, len(keys))]
		chans := make([]string, len(batch))
		for i, k := range batch {
			chans[i] = redisstore.EventsChannel(k)
		}
		cmd := dc.B().Unsubscribe().Channel(chans...).Build()
		if sub {
			cmd = dc.B().Subscribe().Channel(chans...).Build()
		}
		if err := dc.Do(ctx, cmd).Error(); err != nil {
			return err
		}
	}
	return nil
}

// streamOf is the stream key of an events channel.
func streamOf(channel string) string {
	return strings.TrimPrefix(channel, redisstore.EventsChannelPrefix)
}

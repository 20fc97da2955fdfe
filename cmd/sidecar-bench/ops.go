package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// kind is one measured request type.
type kind int

const (
	opAppend kind = iota
	opRead
	opFeedback
	opUsage
	opLockAcquire
	opLockRelease
	numKinds
)

var kindNames = [numKinds]string{"append", "read", "feedback", "usage", "lock_acquire", "lock_release"}

// mixOps are the names -mix accepts; "lock" is acquire and release in turn.
var mixOps = []string{"append", "read", "feedback", "usage", "lock"}

// mix is the cumulative weights of mixOps.
type mix struct {
	cum   [5]int
	total int
	text  string
}

func parseMix(s string) (mix, error) {
	var m mix
	var w [5]int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			val = "1"
		}
		i := -1
		for j, n := range mixOps {
			if n == strings.TrimSpace(name) {
				i = j
			}
		}
		if i < 0 {
			return m, fmt.Errorf("unknown operation %q (append, read, feedback, usage, lock)", name)
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 0 || n > 1000000 {
			return m, fmt.Errorf("weight of %s: %q is not a whole number 0-1000000", name, val)
		}
		w[i] += n
	}
	var parts []string
	for i, n := range w {
		m.total += n
		m.cum[i] = m.total
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", mixOps[i], n))
		}
	}
	if m.total == 0 {
		return m, errors.New("no operation with a weight above 0")
	}
	m.text = strings.Join(parts, ",")
	return m, nil
}

// pick draws the next request kind for w.
func (m mix) pick(w *worker) kind {
	r := w.rng.IntN(m.total)
	for i, c := range m.cum {
		if r < c {
			if i == 4 { // lock: release the lock this connection holds, else acquire
				if w.lockToken != "" {
					return opLockRelease
				}
				return opLockAcquire
			}
			return kind(i)
		}
	}
	return opRead
}

// worker is one connection's state: its own session and lock, so phases
// and connections never contend on a key.
type worker struct {
	id        int
	user      string
	session   string
	lockName  string
	rng       *rand.Rand
	seq       int
	lockToken string

	// HTTP paths, built once.
	entries, feedbackBase, usage, lock string
}

func newWorker(run, phase string, id, seed int) *worker {
	w := &worker{
		id:       id,
		user:     "bench-" + run + "-" + phase,
		session:  "c" + strconv.Itoa(id),
		lockName: "bench-" + run + "-" + phase + "-c" + strconv.Itoa(id),
		// The same sequence of operations in every phase.
		rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))),
	}
	base := "/v1/users/" + w.user + "/sessions/" + w.session
	w.entries = base + "/entries"
	w.feedbackBase = base + "/entries/"
	w.usage = base + "/usage"
	w.lock = "/v1/locks/" + w.lockName
	return w
}

// target performs one operation of kind k for worker w.
type target interface {
	do(ctx context.Context, w *worker, k kind) error
}

// Fixed request contents: a typical short Q&A entry, a usage post with
// explicit counts, feedback with text and score.
const (
	question     = "What did the user ask about the deployment schedule for the analytics service?"
	answer       = "The analytics service deploys every Tuesday at 14:00 UTC after the integration suite passes; hotfixes go out on demand."
	usageModel   = "gpt-4o-mini"
	feedbackText = "helpful"
	lockTTLms    = 30000
)

func seedID(i int) string { return "seed-" + strconv.Itoa(i) }

func qaID(w *worker) string {
	w.seq++
	return "q" + strconv.Itoa(w.seq)
}

// feedbackTarget picks one of the seeded entries.
func feedbackTarget(w *worker, seeds int) string { return seedID(w.rng.IntN(seeds)) }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

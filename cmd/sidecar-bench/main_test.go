package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSpawnShortRun runs the tool as a user does, with -spawn (its own
// redis-server and a freshly built sidecar), for one second per phase, and
// checks every section of the report is there with non-zero counts. It says
// nothing about speed: numbers live in BENCHMARKS.md.
func TestSpawnShortRun(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("REQUIRE_REAL_REDIS") == "1" {
			t.Fatal("redis-server is not on PATH (apt-get install redis-server)")
		}
		t.Skip("redis-server is not on PATH")
	}
	phases := "direct,sidecar"
	if _, err := exec.LookPath("redis-benchmark"); err == nil {
		phases = "rpush," + phases
	}
	// The build comes first, on its own clock: a cold build while the other
	// test packages compile on the same two cores can take minutes, and is
	// not what this test checks.
	bin, err := buildSidecar(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, []string{"-spawn", "-sidecar-bin", bin, "-d", "1s", "-warmup", "100ms", "-c", "4", "-seed-entries", "5",
		"-startup-runs", "1", "-progress", "off", "-phases", phases}, &out, &errOut)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr not quiet with -progress off: %q", errOut.String())
	}
	text := out.String()
	for _, want := range []string{
		"machine: ", "run: mix append=40,read=30,feedback=10,usage=10,lock=10, 4 connections",
		"sidecar/direct throughput: ", "sidecar adds (sidecar - direct latency):",
		"sidecar RSS: idle ", "startup to ready: 2 starts", "targets:",
		"sidecar adds at p99 (all ops): ", "sidecar peak RSS: ", "startup to ready (median): ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	phase := regexp.MustCompile(`(?m)^phase (direct|sidecar): [0-9.]+ s, (\d+) requests, (\d+) req/s, (\d+) errors$`)
	found := phase.FindAllStringSubmatch(text, -1)
	if len(found) != 2 {
		t.Fatalf("want 2 phase lines (direct, sidecar), got %q", found)
	}
	for _, m := range found {
		n, _ := strconv.Atoi(m[2])
		if n == 0 || m[3] == "0" {
			t.Errorf("phase %s: %s requests at %s req/s", m[1], m[2], m[3])
		}
		if m[4] != "0" {
			t.Errorf("phase %s: %s errors", m[1], m[4])
		}
	}
	// Every operation of the mix ran in both phases and has a latency row.
	for _, op := range kindNames {
		rows := regexp.MustCompile(`(?m)^  `+op+`\s+(\d+)\s+\d+\s+0\s+[0-9.]+ms`).FindAllStringSubmatch(text, -1)
		if len(rows) != 2 {
			t.Errorf("op %s: want a row in each phase, got %q", op, rows)
			continue
		}
		for _, r := range rows {
			if r[1] == "0" {
				t.Errorf("op %s: zero count", op)
			}
		}
	}
	if strings.HasPrefix(phases, "rpush") && !regexp.MustCompile(`(?m)^phase rpush: .* [1-9]\d* req/s$`).MatchString(text) {
		t.Errorf("no rpush phase with a rate")
	}
}

func TestHelpDocumentsFlags(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &out, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, f := range []string{"-spawn", "-sidecar", "-redis", "-mix", "-c ", "-d ", "-n ", "-rate", "-phases", "open loop", "p99.9"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("-h lacks %q", f)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-mix", "append=0"},
		{"-mix", "nope=1", "-spawn"},
		{"-spawn", "-phases", "x"},
		{"-spawn", "-sidecar", "http://127.0.0.1:1"},
		{"-phases", "sidecar"},             // no -sidecar
		{"-sidecar", "http://127.0.0.1:1"}, // no -redis
		{"-spawn", "-c", "0"},
		{"-spawn", "-rate", "-1"},
		{"-spawn", "extra"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err == nil || errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: want an error, got %v", args, err)
		}
	}
}

func TestMixPick(t *testing.T) {
	m, err := parseMix("append=3, lock=1")
	if err != nil {
		t.Fatal(err)
	}
	if m.text != "append=3,lock=1" {
		t.Errorf("text %q", m.text)
	}
	w := newWorker("t", "p", 0, 1)
	var n [numKinds]int
	for range 4000 {
		k := m.pick(w)
		n[k]++
		switch k { // as the targets do on success
		case opLockAcquire:
			w.lockToken = "x"
		case opLockRelease:
			w.lockToken = ""
		}
	}
	if n[opRead]+n[opFeedback]+n[opUsage] != 0 {
		t.Errorf("unweighted operations picked: %v", n)
	}
	if a, l := n[opAppend], n[opLockAcquire]+n[opLockRelease]; a < 2700 || a > 3300 || l < 700 || l > 1300 {
		t.Errorf("append %d, lock %d of 4000: not about 3:1", a, l)
	}
	if d := n[opLockAcquire] - n[opLockRelease]; d < 0 || d > 1 {
		t.Errorf("acquire %d, release %d: must alternate", n[opLockAcquire], n[opLockRelease])
	}
}

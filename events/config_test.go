package events_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// TestRecordingSettings: SESSION_EVENTS is watched by default, always when
// asked, and nothing else; SESSION_EVENTS_GRACE_SECONDS is 300 by default,
// 1 to 86400; a bad value is refused naming its variable.
func TestRecordingSettings(t *testing.T) {
	s, err := sessionstore.LoadConfig(envconf.Env{})
	if err != nil || s.Events != sessionstore.EventsWatched {
		t.Fatalf("default SESSION_EVENTS: %q %v, want watched", s.Events, err)
	}
	if s, err := sessionstore.LoadConfig(envconf.Env{"SESSION_EVENTS": "always"}); err != nil || s.Events != sessionstore.EventsAlways {
		t.Fatalf("SESSION_EVENTS=always: %q %v", s.Events, err)
	}
	if _, err := sessionstore.LoadConfig(envconf.Env{"SESSION_EVENTS": "sometimes"}); err == nil || !strings.Contains(err.Error(), "SESSION_EVENTS") {
		t.Fatalf("SESSION_EVENTS=sometimes: %v, want an error naming it", err)
	}
	c, err := envconf.Load[events.Config](envconf.Env{})
	if err != nil || c.GraceSeconds != 300 {
		t.Fatalf("default grace: %d %v, want 300", c.GraceSeconds, err)
	}
	for _, v := range []string{"0", "-1", "86401", "5m"} {
		if _, err := envconf.Load[events.Config](envconf.Env{"SESSION_EVENTS_GRACE_SECONDS": v}); err == nil || !strings.Contains(err.Error(), "SESSION_EVENTS_GRACE_SECONDS") {
			t.Errorf("SESSION_EVENTS_GRACE_SECONDS=%s: %v, want an error naming it", v, err)
		}
	}
}

package sidecar_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

func TestConfigDefaults(t *testing.T) {
	c, err := sidecar.LoadConfig(envconf.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:7480" || c.OpsAddr != ":9464" || c.Modules != "all" ||
		c.MaxBodyBytes != 1<<20 || c.StartupTimeout != time.Minute || c.LogLevel != "info" ||
		c.LogFormat != "json" || !c.Redis.Embedded() || c.Redis.Port != 6379 || c.Redis.SSLCertReqs != "required" {
		t.Fatalf("defaults: %+v", c)
	}
	want := sidecar.Limits{MaxAnswerBytes: 4 << 20, MaxMessageBodyBytes: 8 << 20, MaxItemBytes: 1 << 20, SearchIndex: sidecar.SearchOnDemand}
	if c.Limits != want {
		t.Fatalf("shared limits: %+v, want %+v", c.Limits, want)
	}
}

// SEARCH_INDEX's spellings, each parsed once to its mode.
func TestSearchIndexValues(t *testing.T) {
	for v, want := range map[string]sidecar.SearchIndex{
		"": sidecar.SearchOnDemand, "on-demand": sidecar.SearchOnDemand, "OnDemand": sidecar.SearchOnDemand,
		"eager": sidecar.SearchEager, "true": sidecar.SearchEager, "1": sidecar.SearchEager,
		"off": sidecar.SearchOff, " FALSE ": sidecar.SearchOff, "0": sidecar.SearchOff,
	} {
		c, err := sidecar.LoadConfig(envconf.Env{"SEARCH_INDEX": v})
		if err != nil || c.Limits.SearchIndex != want {
			t.Errorf("SEARCH_INDEX=%q: %q, %v; want %q", v, c.Limits.SearchIndex, err, want)
		}
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		env     envconf.Env
		wantVar string
	}{
		{envconf.Env{"SIDECAR_LISTEN_ADDR": "7480"}, "SIDECAR_LISTEN_ADDR"},
		{envconf.Env{"SIDECAR_LISTEN_ADDR": "127.0.0.1:99999"}, "SIDECAR_LISTEN_ADDR"},
		{envconf.Env{"SIDECAR_OPS_ADDR": "localhost"}, "SIDECAR_OPS_ADDR"},
		{envconf.Env{"SIDECAR_MAX_BODY_BYTES": "0"}, "SIDECAR_MAX_BODY_BYTES"},
		{envconf.Env{"SIDECAR_MAX_BODY_BYTES": "1MB"}, "SIDECAR_MAX_BODY_BYTES"},
		{envconf.Env{"SIDECAR_INFLIGHT_BYTES": "-1"}, "SIDECAR_INFLIGHT_BYTES"},
		{envconf.Env{"SIDECAR_INFLIGHT_BYTES": "64MiB"}, "SIDECAR_INFLIGHT_BYTES"},
		{envconf.Env{"SIDECAR_STARTUP_TIMEOUT": "forever"}, "SIDECAR_STARTUP_TIMEOUT"},
		{envconf.Env{"SIDECAR_STARTUP_TIMEOUT": "0"}, "SIDECAR_STARTUP_TIMEOUT"},
		{envconf.Env{"SIDECAR_REQUEST_TIMEOUT": "-1s"}, "SIDECAR_REQUEST_TIMEOUT"},
		{envconf.Env{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{envconf.Env{"LOG_FORMAT": "xml"}, "LOG_FORMAT"},
		{envconf.Env{"REDIS_URL": "mysql://x"}, "REDIS_URL"},
		{envconf.Env{"CACHE_HOST": "redis", "CACHE_PORT": "65536"}, "CACHE_PORT"},
		{envconf.Env{"CACHE_HOST": "redis", "CACHE_PORT": "six"}, "CACHE_PORT"},
		{envconf.Env{"CACHE_SSL": "maybe"}, "CACHE_SSL"},
		{envconf.Env{"CACHE_SSL_CERT_REQS": "sometimes"}, "CACHE_SSL_CERT_REQS"},
		// The settings modules share, checked once by the host.
		{envconf.Env{"SIDECAR_MAX_ANSWER_BYTES": "4095"}, "SIDECAR_MAX_ANSWER_BYTES"},
		{envconf.Env{"SIDECAR_MAX_ANSWER_BYTES": "4MB"}, "SIDECAR_MAX_ANSWER_BYTES"},
		{envconf.Env{"SIDECAR_MAX_MESSAGE_BODY_BYTES": "1000"}, "SIDECAR_MAX_MESSAGE_BODY_BYTES"},
		{envconf.Env{"SIDECAR_MAX_MESSAGE_BODY_BYTES": "268435457"}, "SIDECAR_MAX_MESSAGE_BODY_BYTES"},
		{envconf.Env{"SESSION_MAX_ITEM_BYTES": "100"}, "SESSION_MAX_ITEM_BYTES"},
		{envconf.Env{"SESSION_MAX_ITEM_BYTES": "2000000", "SIDECAR_MAX_MESSAGE_BODY_BYTES": "1000000"}, "SESSION_MAX_ITEM_BYTES"},
		{envconf.Env{"SEARCH_INDEX": "sometimes"}, "SEARCH_INDEX"},
	}
	for _, tc := range tests {
		_, err := sidecar.LoadConfig(tc.env)
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantVar+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadConfig(%v) = %v, want one line naming %s", tc.env, err, tc.wantVar)
		}
	}
}

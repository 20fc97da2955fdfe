package redisstore

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantVar string // "" = valid
	}{
		{"embedded", Options{Port: 6379, SSLCertReqs: "required"}, ""},
		{"url", Options{URL: "redis://localhost:6379/0", Port: 6379, SSLCertReqs: "required"}, ""},
		{"tls url", Options{URL: "rediss://u:p@redis.example:6380", Port: 6379, SSLCertReqs: "required"}, ""},
		{"unix url", Options{URL: "unix:///run/redis.sock", Port: 6379, SSLCertReqs: "required"}, ""},
		{"cluster url", Options{URL: "redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", Port: 6379, SSLCertReqs: "required"}, ""},
		{"cache host", Options{Host: "redis", Port: 6379, SSL: true, SSLCertReqs: "none"}, ""},
		{"bad scheme", Options{URL: "http://localhost:6379", Port: 6379, SSLCertReqs: "required"}, "REDIS_URL"},
		{"malformed url", Options{URL: "redis://local host:6379", Port: 6379, SSLCertReqs: "required"}, "REDIS_URL"},
		{"url port out of range", Options{URL: "redis://localhost:70000", Port: 6379, SSLCertReqs: "required"}, "REDIS_URL"},
		{"url bad db", Options{URL: "redis://localhost:6379/x", Port: 6379, SSLCertReqs: "required"}, "REDIS_URL"},
		{"url no host", Options{URL: "redis://", Port: 6379, SSLCertReqs: "required"}, "REDIS_URL"},
		{"port out of range", Options{Host: "redis", Port: 0, SSLCertReqs: "required"}, "CACHE_PORT"},
		{"port too big", Options{Host: "redis", Port: 65536, SSLCertReqs: "required"}, "CACHE_PORT"},
		{"host with slash", Options{Host: "redis/0", Port: 6379, SSLCertReqs: "required"}, "CACHE_HOST"},
		{"cert reqs", Options{Host: "redis", Port: 6379, SSL: true, SSLCertReqs: "maybe"}, "CACHE_SSL_CERT_REQS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.wantVar == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantVar+": ") {
				t.Fatalf("got %v, want an error naming %s", err, tc.wantVar)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

func TestOptionsNeverLeakThePassword(t *testing.T) {
	tests := []Options{
		{URL: "redis://user:hunter2@redis:6379", Port: 6379, SSLCertReqs: "required"},
		{URL: "redis://user:hunter2@redis:99999", Port: 6379, SSLCertReqs: "required"},
		{URL: "redis://user:hunter2@red is:6379", Port: 6379, SSLCertReqs: "required"},
		{Host: "redis", Port: 6379, Username: "user", Password: "hunter2", SSLCertReqs: "required"},
	}
	for _, o := range tests {
		if strings.Contains(o.Redacted(), "hunter2") {
			t.Errorf("Redacted() = %q shows the password", o.Redacted())
		}
		if err := o.Validate(); err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Validate() = %q shows the password", err)
		}
	}
}

func TestTLSOptions(t *testing.T) {
	opt, err := Options{Host: "redis.internal", Port: 6380, SSL: true, SSLCertReqs: "required"}.clientOption()
	if err != nil {
		t.Fatal(err)
	}
	if opt.TLSConfig == nil || opt.TLSConfig.ServerName != "redis.internal" || opt.TLSConfig.InsecureSkipVerify {
		t.Fatalf("TLS config %+v, want verification against redis.internal", opt.TLSConfig)
	}
	opt, _ = Options{Host: "redis.internal", Port: 6380, SSL: true, SSLCertReqs: "none"}.clientOption()
	if opt.TLSConfig == nil || !opt.TLSConfig.InsecureSkipVerify {
		t.Fatal("CACHE_SSL_CERT_REQS=none did not skip verification")
	}
	opt, _ = Options{Host: "redis.internal", Port: 6380, Username: "agent", Password: "pw", SSLCertReqs: "required"}.clientOption()
	if opt.TLSConfig != nil || opt.Username != "agent" || opt.Password != "pw" || opt.InitAddress[0] != "redis.internal:6380" {
		t.Fatalf("got %+v, want plain TCP with ACL user agent", opt)
	}
}

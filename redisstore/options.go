package redisstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// Options says where Redis is. It is parsed from the environment with
// Cognee's variable names, so a Cognee .env works unchanged. REDIS_URL wins
// over CACHE_*; when neither REDIS_URL nor CACHE_HOST is set the sidecar runs
// on an embedded in-process Redis (miniredis).
type Options struct {
	URL         string `env:"REDIS_URL"`
	Host        string `env:"CACHE_HOST"`
	Port        int    `env:"CACHE_PORT" envDefault:"6379"`
	Username    string `env:"CACHE_USERNAME"`
	Password    string `env:"CACHE_PASSWORD"`
	SSL         bool   `env:"CACHE_SSL" envDefault:"false"`
	SSLCertReqs string `env:"CACHE_SSL_CERT_REQS" envDefault:"required"`

	// Standalone skips rueidis's cluster detection (not an environment
	// variable): set for miniredis, which answers CLUSTER SLOTS as a
	// one-node cluster and would otherwise get the cluster key layout.
	Standalone bool
}

// Embedded reports whether no external Redis is configured.
func (o Options) Embedded() bool { return o.URL == "" && o.Host == "" }

// Validate checks every field without touching the network.
func (o Options) Validate() error {
	_, err := o.clientOption()
	return err
}

// Redacted names the Redis endpoint for logs, with any password masked.
func (o Options) Redacted() string {
	switch {
	case o.URL != "":
		u, err := url.Parse(o.URL)
		if err != nil {
			return "(unparsable REDIS_URL)"
		}
		return u.Redacted()
	case o.Host != "":
		scheme := "redis"
		if o.SSL {
			scheme = "rediss"
		}
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(o.Host, strconv.Itoa(o.Port))}
		if o.Username != "" || o.Password != "" {
			u.User = url.UserPassword(o.Username, "xxxxx")
		}
		return u.String()
	default:
		return "embedded"
	}
}

// dialTimeout bounds one connection attempt. Redis is on the pod's network or
// the node's; a second is generous and keeps a failing start easy to see.
const dialTimeout = 2 * time.Second

// clientOption translates Options into rueidis options (minus InitAddress for
// the embedded case, which is only known once miniredis listens).
func (o Options) clientOption() (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	// A bad value is a mistake even where it is not used (CACHE_PORT beside
	// a REDIS_URL): say so now rather than when someone drops the URL.
	if o.Port < 1 || o.Port > 65535 {
		return opt, envconf.Invalid("CACHE_PORT", "port %d is out of range 1-65535", o.Port)
	}
	switch {
	case o.URL != "":
		u, err := url.Parse(o.URL)
		if err != nil {
			return opt, envconf.Invalid("REDIS_URL", "not a URL: %s", redactURLError(err))
		}
		switch u.Scheme {
		case "redis", "rediss", "unix":
		default:
			return opt, envconf.Invalid("REDIS_URL", "scheme %q is not redis://, rediss:// or unix://", u.Scheme)
		}
		if u.Scheme != "unix" && u.Host == "" {
			return opt, envconf.Invalid("REDIS_URL", "no host in URL")
		}
		if u.Scheme == "unix" && u.Path == "" {
			return opt, envconf.Invalid("REDIS_URL", "no socket path in unix:// URL")
		}
		if port := u.Port(); port != "" {
			if err := checkPort(port); err != nil {
				return opt, envconf.Invalid("REDIS_URL", "%v", err)
			}
		}
		opt, err = rueidis.ParseURL(o.URL)
		if err != nil {
			return opt, envconf.Invalid("REDIS_URL", "%s", strings.TrimPrefix(err.Error(), "redis: "))
		}
	case o.Host != "":
		if strings.ContainsAny(o.Host, "/ ") {
			return opt, envconf.Invalid("CACHE_HOST", "%q is not a host name or address", o.Host)
		}
		for _, h := range strings.Split(o.Host, ",") {
			h = strings.TrimSpace(h)
			if h == "" {
				return opt, envconf.Invalid("CACHE_HOST", "empty host in list")
			}
			opt.InitAddress = append(opt.InitAddress, net.JoinHostPort(h, strconv.Itoa(o.Port)))
		}
		opt.Username = o.Username
		opt.Password = o.Password
		if o.SSL {
			opt.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: strings.TrimSpace(strings.Split(o.Host, ",")[0])}
		}
	}
	switch o.SSLCertReqs {
	case "required", "optional":
	case "none":
		if opt.TLSConfig != nil {
			opt.TLSConfig.InsecureSkipVerify = true
		}
	default:
		return opt, envconf.Invalid("CACHE_SSL_CERT_REQS", "%q is not one of none, optional, required", o.SSLCertReqs)
	}
	opt.Dialer.Timeout = dialTimeout
	// Fail fast: the caller (an agent) retries; a sidecar that silently
	// retries a write for seconds only hides an outage. Reads fail fast too,
	// so /readyz and the API report an outage at once.
	opt.DisableRetry = true
	// No client-side caching: the sidecar does not read through DoCache,
	// and CLIENT TRACKING is missing on miniredis, Redis < 6 and some
	// proxies. Issue-level optimisations may turn it on per read later.
	opt.DisableCache = true
	opt.ForceSingleClient = o.Standalone
	return opt, nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is out of range 1-65535", p)
	}
	return nil
}

// redactURLError keeps url.Parse's explanation without echoing the URL,
// which may carry a password.
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "malformed"
}

package envconf_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
)

type inner struct {
	Port     int    `env:"X_PORT" envDefault:"6379"`
	Password string `env:"X_PASSWORD"`
}

type conf struct {
	Inner   inner
	On      bool          `env:"X_ON" envDefault:"false"`
	Wait    time.Duration `env:"X_WAIT" envDefault:"60s"`
	Secret  int           `env:"X_API_TOKEN"`
	Budget  float64       `env:"X_BUDGET"`
	Entries uint          `env:"X_ENTRIES"`
}

func TestParseNamesTheVariable(t *testing.T) {
	tests := []struct {
		env  envconf.Env
		want string
	}{
		{envconf.Env{"X_PORT": "abc"}, `X_PORT: "abc" is not an integer`},
		{envconf.Env{"X_ON": "yes please"}, `X_ON: "yes please" is not a boolean (true or false)`},
		{envconf.Env{"X_WAIT": "soon"}, `X_WAIT: "soon" is not a duration ("60s", "1m30s" or a number of seconds)`},
		{envconf.Env{"X_BUDGET": "lots"}, `X_BUDGET: "lots" is not a number`},
		{envconf.Env{"X_ENTRIES": "-1"}, `X_ENTRIES: "-1" is not a non-negative integer`},
		{envconf.Env{"X_API_TOKEN": "sekrit"}, `X_API_TOKEN: value is not an integer`},
	}
	for _, tc := range tests {
		var c conf
		err := tc.env.Parse(&c)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%v) = %v, want %q", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("error %q echoes a secret", err)
		}
	}
}

func TestParseDefaultsAndSeconds(t *testing.T) {
	var c conf
	if err := (envconf.Env{"X_WAIT": "90", "X_PASSWORD": "p"}).Parse(&c); err != nil {
		t.Fatal(err)
	}
	if c.Wait != 90*time.Second || c.Inner.Port != 6379 || c.Inner.Password != "p" || c.On {
		t.Fatalf("got %+v", c)
	}
	if err := (envconf.Env{"X_WAIT": "1m30s"}).Parse(&c); err != nil || c.Wait != 90*time.Second {
		t.Fatalf("1m30s: got %v %v", c.Wait, err)
	}
}

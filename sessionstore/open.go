package sessionstore

import (
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Open is how a module that extends the session begins its New: the
// host's one session Store (FromDeps) and the module's own settings C,
// parsed and validated from deps.Env (envconf.Load).
func Open[C any](deps sidecar.Deps) (*Store, C, error) {
	var cfg C
	s, err := FromDeps(deps)
	if err != nil {
		return nil, cfg, err
	}
	cfg, err = envconf.Load[C](deps.Env)
	if err != nil {
		return nil, cfg, err
	}
	return s, cfg, nil
}

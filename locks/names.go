package locks

import (
	"net/http"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// lockName is the {name} of a lock route: an id (sidecar.PathID) that is not
// one of the sidecar's own key names. The lock key is the bare name, as in
// redis-py, so a lock named agent_usage_totals would take the global usage
// totals; such names are refused with 400 invalid_id on every route.
func lockName(r *http.Request) (string, error) {
	name, err := sidecar.PathID(r, "name")
	if err != nil {
		return "", err
	}
	if redisstore.Reserved(name) {
		return "", sidecar.BadRequest("invalid_id",
			"lock name %s is reserved: the sidecar's own keys use it (reserved: %s, alone or followed by ':'); pick another name, e.g. with your application's prefix",
			name, strings.Join(redisstore.ReservedNames(), ", "))
	}
	return name, nil
}

package search

import (
	"strings"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// Mode is SEARCH_INDEX: which writes keep the relevance index.
type Mode string

// The modes. true and false are accepted as Eager and Off.
const (
	// OnDemand (the default): a user's writes are indexed only while the
	// user has an index, which the user's first relevance search makes
	// (and builds in bounded steps, newest sessions first); each search
	// slides it with the session TTL. A user who never searches costs
	// what Off costs, plus one EXISTS per write.
	OnDemand Mode = "on-demand"
	// Eager: every write is indexed.
	Eager Mode = "eager"
	// Off: no write is indexed.
	Off Mode = "off"
	// Probe is OnDemand for a write sent without its document: the
	// sidecar believes the user has no index (not a SEARCH_INDEX value;
	// Parse never answers it). The script answers pending when the user
	// has one, and the catch-up indexes the write.
	Probe Mode = "probe"
)

// Parse is the one parser of SEARCH_INDEX (the sessions and messages
// modules' configurations both use it): the mode, or an *envconf.Error.
func (m Mode) Parse() (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(string(m))) {
	case "on-demand", "ondemand", "":
		return OnDemand, nil
	case "eager", "true", "1":
		return Eager, nil
	case "off", "false", "0":
		return Off, nil
	}
	return "", envconf.Invalid("SEARCH_INDEX", "%q is not a search index mode (on-demand, eager or off; true and false mean eager and off)", string(m))
}

// Of is m parsed, OnDemand for a value Parse refuses (configurations are
// validated before use).
func (m Mode) Of() Mode {
	if m == Probe {
		return Probe
	}
	p, err := m.Parse()
	if err != nil {
		return OnDemand
	}
	return p
}

// ProbeSpec is the spec of a write sent without its document (Probe): the
// script indexes nothing, and says so when the user has an index.
const ProbeSpec = "?!"

// Spec is a document's spec as the write scripts take it under mode m:
// under OnDemand prefixed with "?" (index only while the user has an
// index: search.lua, wanted).
func (m Mode) Spec(spec string) string {
	if m.Of() == OnDemand {
		return "?" + spec
	}
	return spec
}

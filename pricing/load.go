package pricing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// Load returns Default() merged with the price file at path (the file wins per
// model); path "" is Default(). Every error is an *envconf.Error naming
// MODEL_PRICES_FILE, one line.
func Load(path string) (*Table, error) {
	base := Default()
	if path == "" {
		return base, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, envconf.Invalid(FileVar, "cannot read %q: %v", path, err)
	}
	models, err := parse(data)
	if err != nil {
		return nil, envconf.Invalid(FileVar, "%q: %v", path, err)
	}
	t := &Table{
		byKey:    make(map[string]entry, len(base.byKey)+len(models)),
		maxKey:   base.maxKey,
		families: base.families,
	}
	for k, e := range base.byKey {
		t.byKey[k] = e
	}
	for _, m := range models {
		t.set(m.name, m.price)
	}
	return t, nil
}

type model struct {
	name  string
	price Price
}

// parse reads a LiteLLM-shaped price table. The models come in sorted order,
// so of two names differing only in case the lower-case one comes last (and
// wins in Table.set).
func parse(data []byte) ([]model, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("must hold a JSON object keyed by model name")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, jsonError(data, err)
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	models := make([]model, 0, len(names))
	for _, name := range names {
		if strings.EqualFold(name, "sample_spec") {
			continue // LiteLLM's documentation entry
		}
		if name == "" {
			return nil, errors.New("a model name is empty")
		}
		v := bytes.TrimSpace(raw[name])
		var fields map[string]json.RawMessage
		if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &fields) != nil {
			return nil, fmt.Errorf("model %q: must be a JSON object", name)
		}
		in, hasIn, err := cost(fields, "input_cost_per_token")
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		out, hasOut, err := cost(fields, "output_cost_per_token")
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		if !hasIn && !hasOut {
			continue // priced per image, second, query...: not ours
		}
		models = append(models, model{name, Price{InputPerToken: in, OutputPerToken: out}})
	}
	return models, nil
}

// cost reads one cost field; absent or null is (0, false).
func cost(fields map[string]json.RawMessage, key string) (float64, bool, error) {
	v, ok := fields[key]
	if !ok || string(v) == "null" {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f < 0 {
		var shown bytes.Buffer
		if json.Compact(&shown, v) != nil {
			shown.Reset()
			shown.Write(v)
		}
		s := shown.String()
		if len(s) > 40 {
			s = strings.ToValidUTF8(s[:40], "") + "..."
		}
		return 0, false, fmt.Errorf("%s must be a non-negative number (USD per token), got %s", key, s)
	}
	return f, true, nil
}

// jsonError places a syntax error at its line and column.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("malformed JSON: %v", err)
	}
	before := data[:min(int(se.Offset), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - (bytes.LastIndexByte(before, '\n') + 1)
	return fmt.Errorf("malformed JSON at line %d, column %d: %v", line, col, se)
}

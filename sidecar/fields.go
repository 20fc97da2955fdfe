package sidecar

import "encoding/json"

// ObjectFields is a quick path for a hot handler's request body: when body
// is one valid JSON object passing the strictness every body passes (see
// DecodeJSON) whose keys have no escapes and whose values are
// strings, numbers, literals or arrays of those (no object at any depth),
// it calls field with each member's key and raw value bytes (a slice of
// body, whitespace trimmed) in order and reports true. It reports false as
// soon as anything is outside that shape or field returns false (an
// unknown or repeated key, a value of the wrong type): the caller then
// decodes body with DecodeJSONBytes, which gives the answer or the exact
// error of the full decoder. It allocates nothing; field receives key as
// bytes (switch on string(key) does not allocate).
func ObjectFields(body []byte, field func(key, raw []byte) bool) bool {
	if !json.Valid(body) || checkText(body) != nil {
		return false
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return true
	}
	for {
		if body[i] != '"' {
			return false
		}
		j := i + 1
		for body[j] != '"' {
			if body[j] == '\\' {
				return false
			}
			j++
		}
		key := body[i+1 : j]
		i = skipSpace(body, skipSpace(body, j+1)+1) // past ':'
		end, ok := flatValue(body, i)
		if !ok || !field(key, body[i:end]) {
			return false
		}
		i = skipSpace(body, end)
		if body[i] == '}' {
			return true
		}
		i = skipSpace(body, i+1) // past ','
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// flatValue returns the end of the valid JSON value at b[i:], false for an
// object or an array holding an array or object.
func flatValue(b []byte, i int) (int, bool) {
	switch b[i] {
	case '{':
		return 0, false
	case '"':
		return endString(b, i), true
	case '[':
		for i++; b[i] != ']'; i++ {
			switch b[i] {
			case '[', '{':
				return 0, false
			case '"':
				i = endString(b, i) - 1
			}
		}
		return i + 1, true
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i, true
}

// endString returns the index just past the string that opens at b[i].
func endString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

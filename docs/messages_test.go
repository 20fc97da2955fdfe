package docs_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// curlCase is one curl command of a page and the status its comment
// promises ("# → 201 ...").
type curlCase struct {
	cmd    string
	status string
}

// curlCases returns every curl command of the ```sh blocks of file, in
// order, each with the status of the nearest comment above it.
func curlCases(t *testing.T, file string) []curlCase {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []curlCase
	status := ""
	arrow := regexp.MustCompile(`→ (\d{3})`)
	for _, blk := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		lines := strings.Split(strings.ReplaceAll(blk[1], "\\\n", ""), "\n")
		for _, l := range lines {
			l = strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(l, "#"):
				if m := arrow.FindStringSubmatch(l); m != nil {
					status = m[1]
				}
			case strings.HasPrefix(l, "curl "):
				if status == "" {
					t.Fatalf("%s: %q has no status comment (# → NNN) above it", file, l)
				}
				out = append(out, curlCase{cmd: l, status: status})
				status = ""
			}
		}
	}
	return out
}

// TestMessagesPageCurl runs every curl example of messages.md, in order,
// against a live sidecar: each answers the status its comment promises.
func TestMessagesPageCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	h := start(t)
	cases := curlCases(t, "messages.md")
	if len(cases) < 15 {
		t.Fatalf("messages.md: %d curl examples, want every call", len(cases))
	}
	for _, c := range cases {
		cmd := exec.Command("bash", "-c", c.cmd+` -o /dev/null -w '%{http_code}'`)
		cmd.Env = append(os.Environ(), "API="+h.API)
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.cmd, err)
		}
		if string(got) != c.status {
			t.Errorf("%s: status %s, want %s", c.cmd, got, c.status)
		}
	}
}

package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// client.md's two ways to use the client before the module is published,
// run as written in a new module next to a "checkout" (this repository),
// offline: the build must find the client through them alone.
func TestClientInstallFromCheckout(t *testing.T) {
	doc, err := os.ReadFile("client.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(doc), "\n## Install\n")
	j := strings.Index(string(doc), "\n## Use\n")
	if i < 0 || j < i {
		t.Fatal(`client.md has no "## Install" section before "## Use"`)
	}
	blocks := regexp.MustCompile("(?s)\n```sh\n(.*?)```\n").FindAllStringSubmatch(string(doc)[i:j], -1)
	if len(blocks) != 3 || !strings.HasPrefix(blocks[0][1], "go get github.com/agentsidecar/agentsidecar/client\n") {
		t.Fatalf("Install: %d sh blocks, want go get, then go work, then replace", len(blocks))
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, script string }{
		{"go work", blocks[1][1]},
		{"replace", blocks[2][1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(repo, filepath.Join(dir, "agentsidecar")); err != nil {
				t.Fatal(err)
			}
			mod := filepath.Join(dir, "agent")
			if err := os.Mkdir(mod, 0o755); err != nil {
				t.Fatal(err)
			}
			main := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/agentsidecar/agentsidecar/client\"\n)\n\n" +
				"func main() { fmt.Println(client.New(\"http://127.0.0.1:7480\") != nil) }\n"
			if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(main), 0o644); err != nil {
				t.Fatal(err)
			}
			script := "go mod init example.com/agent\n" + tc.script + "go run .\n"
			cmd := exec.Command("bash", "-eu", "-c", script)
			cmd.Dir = mod
			// Offline: the dependencies come from the module cache.
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=", "GOWORK=")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "true\n") {
				t.Fatalf("%s\n%s: %v\n%s", script, tc.name, err, out)
			}
		})
	}
}

package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Docker engine runs on the build machines, so the Dockerfile is checked
// for the rules it must keep, and the build it runs is run here.
func TestDockerfileRules(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(froms))
	}
	final := froms[len(froms)-1][1]
	if !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("final image %s is not distroless static or scratch", final)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X github.com/agentsidecar/agentsidecar/sidecar.Version=${VERSION}", "EXPOSE 7480 9464", "./cmd/sidecar"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(user) == 0 || strings.HasPrefix(user[len(user)-1][1], "0") || strings.HasPrefix(user[len(user)-1][1], "root") {
		t.Errorf("the image does not run as a non-root user: %v", user)
	}
}

// The Dockerfile's build command gives a static binary with the version
// stamped.
func TestStaticBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := filepath.Join(t.TempDir(), "sidecar")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags",
		"-s -w -X github.com/agentsidecar/agentsidecar/sidecar.Version=v9.9.9-test", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("binary is dynamically linked (%v)", p.Type)
		}
	}
	v, err := exec.Command(out, "--version").Output()
	if err != nil || !strings.HasPrefix(string(v), "sidecar v9.9.9-test ") {
		t.Fatalf("--version printed %q (%v), want the stamped version", v, err)
	}
}

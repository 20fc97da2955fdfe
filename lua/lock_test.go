package lua_test

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/lua"
)

// TestLockScriptsArePinned pins each lock script's SHA1 (as redsync does):
// any edit of a script shows in review, with this test's diff.
func TestLockScriptsArePinned(t *testing.T) {
	tests := []struct {
		script *lua.Script
		sha1   string
	}{
		{lua.LockAcquire, "80ab90362e5377c86b294af25341c3513c9e1085"},
		{lua.LockRefresh, "ebbb8541a6a320120a8c4a9106ac8ebc5dc74ac3"},
		{lua.LockRelease, "bc0139ea1c9d079344faa706c81af0d50e46bea7"},
		{lua.LockInspect, "9afb92351da2c032b82eee127f4de8f0ed02d6c8"},
	}
	for _, tc := range tests {
		t.Run(tc.script.Name, func(t *testing.T) {
			sum := sha1.Sum([]byte(tc.script.Source))
			if got := hex.EncodeToString(sum[:]); got != tc.sha1 {
				t.Errorf("SHA1 %s, want %s: update the pin if the change is intended", got, tc.sha1)
			}
			for _, want := range []string{"-- KEYS[1] = ", "-- returns "} {
				if !strings.Contains(tc.script.Source, want) {
					t.Errorf("header lacks %q", want)
				}
			}
		})
	}
}

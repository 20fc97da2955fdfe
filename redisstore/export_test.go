package redisstore

// Unregister removes a registered family: tests only, to undo a Register.
func Unregister(name string) { unregister(name) }

// Declared is f as its package declared it, before Register derived its
// patterns (to register it again).
func Declared(f Family) Family {
	if !f.explicit {
		f.Pattern, f.ClusterPattern = "", ""
	}
	return f
}

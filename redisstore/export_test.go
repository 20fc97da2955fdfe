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

// StockOrder is the names of the stock order, in it.
func StockOrder() []string {
	out := make([]string, len(stockOrder))
	for name, i := range stockOrder {
		out[i] = name
	}
	return out
}

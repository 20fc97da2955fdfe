package redisstore

// Owner registers the families of one module in the two common shapes,
// one line each, with the module's name as their Owner: a keys.go lists
// them as a table. A family of another shape (a retention, explicit
// patterns, session members) is registered with Register itself.
type Owner string

// Session registers o's session family: keys <prefix>:<tag><u>:<s>, code
// in the record's fams, the session's TTL. It panics as Register does.
func (o Owner) Session(name, prefix, code string, kind Kind, description string) Family {
	return Register(Family{Name: name, Prefix: prefix, Code: code, Scope: ScopeSession, Kind: kind, Owner: string(o), TTL: SessionTTL, Description: description})
}

// User registers o's user family that lives as long as the user's sessions
// (UserTTL): keys <prefix>:<tag><u>, or <prefix>:<tag><u>:<suffix> when
// suffix (Family.Suffix) is not empty. It panics as Register does.
func (o Owner) User(name, prefix, suffix string, kind Kind, description string) Family {
	return Register(Family{Name: name, Prefix: prefix, Scope: ScopeUser, Suffix: suffix, Kind: kind, Owner: string(o), TTL: UserTTL, Description: description})
}

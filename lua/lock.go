package lua

// The scripts of the locks module (docs/locks.md). A lock named n is the key n
// itself holding its holder's token, exactly as redis-py's Lock stores it;
// its companions {n}:fence and {n}:meta share n's Redis Cluster slot.
var (
	LockAcquire = load("lock_acquire")
	LockRefresh = load("lock_refresh")
	LockRelease = load("lock_release")
	LockInspect = load("lock_inspect", ReadOnly)
)

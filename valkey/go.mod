module github.com/valkey-operator/valkey-operator/valkey

go 1.26.0

replace github.com/valkey-operator/valkey-operator/valkeyconf => ../valkeyconf

require (
	github.com/redis/rueidis v1.0.79
	github.com/valkey-operator/valkey-operator/valkeyconf v0.2.0
)

require golang.org/x/sys v0.48.0 // indirect

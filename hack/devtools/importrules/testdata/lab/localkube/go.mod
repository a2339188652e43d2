module github.com/valkey-operator/valkey-operator/localkube

go 1.26.0

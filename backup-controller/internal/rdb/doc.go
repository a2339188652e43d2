// Package rdb takes a snapshot of a Valkey server over the replication protocol, the way
// valkey-cli --rdb does, and reads what the snapshot says about itself.
//
// A transfer is: AUTH as a user allowed the replication handshake, INFO to learn the
// server's role, link state and version, REPLCONF capa eof (the server may stream a
// diskless snapshot ended by a 40-byte mark), REPLCONF rdb-only 1 (the server closes the
// link after the snapshot instead of streaming its replication feed), then SYNC. The
// reply is the RDB file, as a sized bulk or between EOF marks; keep-alive newlines
// before it are skipped.
//
// Invariants: a snapshot is handed over only whole. Reader returns io.EOF only after
// the end mark (or the announced size) and the RDB's own CRC-64 trailer matched what
// was read; a connection that drops earlier, a wrong checksum or a truncated file is an
// error, so a caller that stores the bytes never mistakes a partial snapshot for one.
package rdb

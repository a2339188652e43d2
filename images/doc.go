// Package images builds container images without Docker or a registry: the
// images of the suites and of the local Kubernetes, from Debian packages and
// local binaries, as docker-archive tarballs that Import loads into
// containerd (kind loads the same files), and the operator's release image
// as an OCI image index (BuildReleaseIndex, for hack/release).
//
// # Images
//
//   - docker.io/valkey/valkey:<version> and :<major.minor>, one per Debian
//     suite, each self-contained from that suite only: 8.0 from
//     bookworm-backports, 8.1 from trixie, 9.x from sid.
//   - docker.io/oliver006/redis_exporter:v<version>, Debian's
//     prometheus-redis-exporter from sid (entrypoint /redis_exporter, as
//     upstream; user and password from REDIS_USER and REDIS_PASSWORD).
//   - docker.io/local/toolbox:dev: busybox and valkey-cli 8.0, for client pods.
//   - registry.k8s.io/pause:3.10: the static Go program of cmd/pause.
//   - the operator image (Config.OperatorRef), when Config.OperatorBinaries is
//     set: static binaries in /usr/local/bin, user nonroot (65532).
//
// Every image is linux/amd64 with one layer, usr-merged (/bin, /sbin, /lib
// and /lib64 are symlinks into /usr), with /etc/passwd and /etc/group, /tmp
// (1777) and, for the Valkey-based ones, /data (0777, owned by 999) and the
// static busybox of bookworm with applet links (sh, nc, wget, timeout, ...).
// Valkey and the exporter run as 999:999. Entries have mtime 0 and the
// config a zero creation time, so equal inputs give equal image IDs.
//
// # Method
//
// Each Debian suite family ("dist": bookworm with bookworm-updates,
// -backports and -security; trixie with its updates and security; sid) has
// its own apt universe under CacheDir/debian/<dist>/: a sources.list,
// package lists, a .deb cache and an empty dpkg status, so that apt-get
// downloads the whole dependency closure of the requested packages. apt
// reads none of the host's configuration (APT_CONFIG points at the dist's
// own apt.conf). Signatures are always checked (signed-by the host's
// debian-archive-keyring.gpg, which verifies all three today); if a suite
// ever fails verification, the debian-archive-keyring package is downloaded
// through the newest suite that did verify (so it is checked by that
// suite's signed hashes) and its keyring is used from then on. Only
// Valid-Until is not enforced, because the mirror may serve a snapshot
// whose Release file is past it (sid is, on this machine).
//
// The requested packages and every lib* package of the closure are
// unpacked with `dpkg-deb --fsys-tarfile` into a staging tree (paths under
// /bin, /lib, ... moved to /usr). The files an image needs are the program
// binaries plus their ELF closure, computed in Go with debug/elf: DT_NEEDED
// entries resolved in DT_RUNPATH/DT_RPATH and Debian's library directories
// inside the staging tree (never the host's), the PT_INTERP loader, and
// every symlink on the way, all followed inside the tree. If a library is
// missing, the remaining packages are unpacked and the closure computed
// again. The layer is written as a sorted tar stream and the image with
// go-containerregistry (empty.Image, mutate.AppendLayers, mutate.ConfigFile,
// tarball.MultiRefWriteToFile with all tags).
//
// # Caching
//
// CacheDir/debian/<dist>/resolved.json records the downloaded closure;
// CacheDir/images/<name>.tar.json records, next to each tarball, the hash
// of its inputs (the .deb files, the image config and tags, the busybox
// applets and accounts, the pause sources, the operator binaries' size and
// mtime, and builderVersion, which must be bumped when the layout code
// changes). A warm Build reads these files only: no apt and no network. apt
// runs when a package is missing (the download is retried after updating
// the lists if it fails) or when Config.Refresh asks for new package lists.
// Concurrent Builds on one CacheDir are serialized with a file lock.
//
// CacheDir/images/manifest.json, read with ReadManifest, is the one place
// tests read image references and exact versions from.
package images

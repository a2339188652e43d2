#!/usr/bin/env bash
# The OCI runtime of a Docker engine on a machine whose capability bounding set lacks
# capabilities its kernel has (this project's machines have no CAP_SYS_RESOURCE): Docker
# 20.10 gives a --privileged container every capability the kernel knows, which runc
# cannot grant there ("unable to apply caps: operation not permitted"), so kind's nodes
# would not start. This wrapper removes from a container's configuration the
# capabilities outside its own bounding set (and from the process of a docker exec), then
# runs runc with the same arguments.
#
# hack/deps.sh installs it as /usr/local/libexec/valkey-operator/bounded-runc and makes it
# the default runtime of the dockerd it starts, on such machines only.
set -euo pipefail
RUNC=${BOUNDED_RUNC_RUNC:-/usr/sbin/runc}

# The names of the capabilities by number (linux/capability.h).
names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
	LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
	SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE
	SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP
	MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
	CHECKPOINT_RESTORE)

# The file to edit: the bundle's config.json of create and run, the process file of exec.
file=""
verb=""
prev=""
for a in "$@"; do
	case "$prev" in
	--bundle | -b) file=$a/config.json ;;
	--process | -p) file=$a ;;
	esac
	case "$a" in
	--bundle=*) file=${a#--bundle=}/config.json ;;
	--process=*) file=${a#--process=} ;;
	create | run | exec) [[ -z $verb ]] && verb=$a ;;
	esac
	prev=$a
done

if [[ -n $verb && -n $file && -f $file ]]; then
	bounding=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
	expr=""
	for i in "${!names[@]}"; do
		((bounding >> i & 1)) && continue
		c=\"CAP_${names[i]}\"
		# Compact JSON, as Docker writes it: the name inside a list, first, last or alone.
		expr+="s/$c,//g; s/,$c\\]/]/g; s/\\[$c\\]/[]/g; "
	done
	if [[ -n $expr ]]; then
		sed -i -e "$expr" "$file"
	fi
fi
exec "$RUNC" "$@"

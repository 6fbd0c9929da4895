#!/bin/sh
# tern-entrypoint: runs tern. "up" reads /etc/tern/tern.yaml when one is
# mounted; otherwise it writes a configuration from the image's template
# with this container's address: N3 must carry an address the gNBs reach
# (it goes into the uplink tunnel they are given), which the embedded
# default 127.0.0.1 is not. A --config of the caller's own comes later on
# the command line and wins.
set -e
if [ "$1" = up ]; then
	shift
	cfg=/etc/tern/tern.yaml
	if [ ! -f "$cfg" ]; then
		ip=${TERN_N3_IP:-$(hostname -i | cut -d' ' -f1)}
		cfg=/tmp/tern.yaml
		sed "s/@N3_IP@/$ip/g" /usr/share/tern/tern.yaml.in >"$cfg"
	fi
	exec tern up --config "$cfg" "$@"
fi
exec tern "$@"

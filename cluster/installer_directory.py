"""The installer's directory, as the run script (cluster/installer.py) takes it: it receives the cluster's secrets
(auth/kubeconfig, the PKI, the installer's state), so it must be the user's alone. An existing one that another user
owns, that its group or everyone may write, or that is a symbolic link stops the run before anything is written
(anyone who can write there could plant auth/kubeconfig as a link to a file of theirs); it is then made anew with
`mkdir -m 700`, never `-p`, so that one someone else made meanwhile stops the run too. The driver's own writes there
hold to the same rule (ocp/private_files.py). Shell text for the run script: GNU coreutils' stat, POSIX sh."""

from __future__ import annotations

OWN_DIRECTORY_CHECK = """if [ -L "$dir" ]; then
  echo "ocp:installer.dir: $dir is a symbolic link (to $(readlink "$dir")), which this program does not follow: name the directory itself" >&2
  exit 3
fi
if [ -e "$dir" ]; then
  if [ ! -d "$dir" ]; then
    echo "ocp:installer.dir: $dir is not a directory: name a new directory" >&2
    exit 3
  fi
  if [ "$(stat -c %u "$dir")" != "$(id -u)" ]; then
    echo "ocp:installer.dir: $dir belongs to $(stat -c %U "$dir") (uid $(stat -c %u "$dir")), not to you ($(id -un) (uid $(id -u))): its owner could read or replace the cluster's secrets written there. Name a directory of your own" >&2
    exit 3
  fi
  mode=$(stat -c %a "$dir")
  who=""
  if [ $(( 0$mode & 020 )) -ne 0 ]; then who="its group"; fi
  if [ $(( 0$mode & 002 )) -ne 0 ]; then who="${who:+$who and }everyone"; fi
  if [ -n "$who" ]; then
    echo "ocp:installer.dir: $dir is writable by $who (mode $mode): they could replace the cluster's secrets written there with links of their own. \\`chmod 700 $dir\\`, or name a directory of your own" >&2
    exit 3
  fi
fi"""

# Then the marker, which names the stack (cluster/installer.py).
REMAKE = """rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
if ! mkdir -m 700 "$dir"; then
  echo "ocp:installer.dir: $dir could not be made anew (someone else made it meanwhile?): name a directory of your own" >&2
  exit 3
fi
printf '%s\\n' "$owner_id" > "$marker\""""

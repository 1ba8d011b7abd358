#!/usr/bin/env bash
# Installs the Debian packages kiln needs (only those missing). Run as root or with sudo.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libxml2-dev libglpk-dev libcriterion-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "kiln setup: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null || {
      echo "kiln setup: missing ${missing[*]}, and neither root nor sudo here to install them" >&2
      exit 1
    }
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# CMakeLists.txt asks for CMake 3.25 (Debian 12, Ubuntu 24.04); older distributions carry older
# ones: say so here rather than in a configure error.
have=$(cmake --version | awk 'NR == 1 { print $3 }')
if [ "$(printf '%s\n3.25\n' "$have" | sort -V | head -1)" != "3.25" ]; then
  echo "kiln setup: CMake $have is older than the 3.25 kiln needs (this distribution's package);" \
       "install a newer one (Kitware's APT repository, backports, or 'pip install cmake') and run again" >&2
  exit 1
fi

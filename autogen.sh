#!/bin/sh
# autogen.sh --- generate ./configure from configure.ac.
set -e
cd "$(dirname "$0")"
autoconf --force
rm -rf autom4te.cache configure~

#!/bin/sh
# Data for `make demo`: MNIST when it is already here (../shared/data/mnist,
# /usr/share/datasets/mnist), else Fashion-MNIST from the Debian package
# dataset-fashion-mnist (-> /usr/share/datasets/fashion-mnist), installed
# here when it is missing and we may install packages. Never fails the build:
# without data the demo itself says where it looked and how to get some.
for d in ../shared/data/mnist ../../shared/data/mnist /usr/share/datasets/mnist \
         /usr/share/datasets/fashion-mnist; do
  for f in "$d"/train-images-idx3-ubyte.gz "$d"/train-images-idx3-ubyte; do
    [ -e "$f" ] && exit 0
  done
done
if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "topos demo: no MNIST found; installing Fashion-MNIST (apt-get install dataset-fashion-mnist)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      dataset-fashion-mnist >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
          dataset-fashion-mnist >/dev/null 2>&1; } ||
      echo "topos demo: could not install dataset-fashion-mnist" >&2
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "topos demo: no MNIST found; installing Fashion-MNIST (sudo apt-get install dataset-fashion-mnist)" >&2
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      dataset-fashion-mnist >/dev/null 2>&1 ||
      echo "topos demo: could not install dataset-fashion-mnist" >&2
  else
    echo "topos demo: no MNIST found; run 'sudo apt-get install dataset-fashion-mnist' for Fashion-MNIST" >&2
  fi
fi
exit 0

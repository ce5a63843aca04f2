#!/bin/sh
echo "preload tests: none yet"

// Package config is the daemon's configuration: config.json's keys and
// their defaults (Config, Default), reading and checking it (Load,
// Validate: unknown keys and bad values are errors that name the key),
// writing it (Write), 'troupe config set' and 'config show' (Set, Show),
// and what a configuration turns into: peer options (Config.PeerOptions)
// and the logger (NewLeveledLogger).
//
// It owns no state: every function works on the Config value it is given.
// It imports only the module's public packages.
package config

// Package method holds what attacks, defenses, detectors, channels and agent
// scenarios share: a registry keyed by the snake_case names users type, a
// description of each method's options with their defaults, and the
// validation of the options a config passes (its attack_specs, defense_specs
// and channel_specs). Each method registers itself from an init function in
// the file that defines it, like a database/sql driver.
package method

/*
 * daemon.h -- `histd` with no subcommand: the daemon (daemon.c). main.c's
 * only way in; everything else of the daemon stays in this folder.
 */
#ifndef HISTD_DAEMON_H
#define HISTD_DAEMON_H

/* Runs the daemon with argv's flags until a signal stops it; returns the
 * exit status (0, 1 a failed start, 2 bad flags, 75 a lost GPU). */
int daemon_main(int argc, char **argv);

#endif

/* cli — the subcommands of the petal-tui program. Each takes the arguments after
 * its name (argv[0] is the subcommand) and returns the process exit status. */
#ifndef PT_CLI_H
#define PT_CLI_H

int cmd_inspect(int argc, char **argv);
int cmd_shards(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_lr_schedule(int argc, char **argv);
int cmd_lrfind(int argc, char **argv);
int cmd_preview(int argc, char **argv);
int cmd_classify(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_ensemble(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_explain(int argc, char **argv);

/* Parse helpers: 0 on success, -1 (with a message on stderr) otherwise. */
int cli_int(const char *opt, const char *s, long long lo, long long hi, long long *out);
int cli_double(const char *opt, const char *s, double lo, double hi, double *out);
/* An --input-norm value as the option table reads it (auto, imagenet, unit, tf, raw,
 * caffe; torch is imagenet); opt "--norm" also takes its old names signed (tf) and none
 * (unit). *out is run.h's run_input_norm. */
int cli_input_norm(const char *opt, const char *s, int *out);
/* A --precision value as the option table reads it (fp32, bf16, auto), resolved on
 * this CPU: *bf16 1 or 0. */
int cli_precision(const char *s, int *bf16);
/* predict's and ensemble's note on stderr of the precision they run at (only bf16:
 * fp32 is what they have always run). */
void cli_precision_note(const char *cmd, int bf16);

/* Whether opt is one of known (NULL-ended). */
int cli_is_option(const char *opt, const char *const *known);
/* Says on stderr that opt is not one of cmd's options (known, NULL-ended; cmd NULL for
 * the training command line), naming the known ones it may have meant: those it begins
 * (ambiguous when several), else those within two letters of it. */
void cli_unknown(const char *cmd, const char *opt, const char *const *known);
/* fn for SIGINT, SIGTERM and SIGHUP (and SIGUSR1 with usr1: how mpirun passes a
 * stop on to every rank), so a command stops what it runs cleanly. */
void cli_catch_stops(void (*fn)(int), int usr1);

#endif

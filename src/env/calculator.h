/* env/calculator.h: the `calculator` tool's evaluator — arithmetic on decimal numbers with
 * + - * / (unary minus and plus too) and parentheses, in double precision, by recursive
 * descent over the text (no code is ever run). Anything else is an error with a message
 * naming the offset: an unknown character, a missing operand or parenthesis, division by
 * zero, a result that is not finite, nesting deeper than CALC_MAX_DEPTH. */
#ifndef RLPT_ENV_CALCULATOR_H
#define RLPT_ENV_CALCULATOR_H

#include <stddef.h>

#define CALC_MAX_DEPTH 64

/* Evaluate expr[0..len) into *out. 0, or -1 with a message in err. */
int calc_eval(const char *expr, size_t len, double *out, char *err, size_t errlen);
/* The result as the tool's text: an integer when the value is one (|v| < 1e15), else the
 * shortest of %.15g / %.17g that reads back as v. */
void calc_format(double v, char *buf, size_t cap);

#endif

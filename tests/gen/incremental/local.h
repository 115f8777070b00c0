/* Next to locked.c and on no include path: the woven copy in the build
 * tree must still find it. */
#define WITHDRAW_FEE 1

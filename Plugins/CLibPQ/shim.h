// libpq, PostgreSQL's own C client (Debian's libpq-dev), for the sample apps' shared store.
#include <libpq-fe.h>

//! Whole bodies: every route, every kind of bad call, the request side,
//! retry, audit, limits and the side routes.

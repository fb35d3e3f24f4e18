//! Doubled slashes: `/api/v1//pop` is routed as `/api/v1/pop`, as actix's
//! `NormalizePath::new(TrailingSlash::MergeOnly)` did, without its cost on every other
//! request. That middleware runs a regex replacement over every path (about 1.5-2 % of
//! the broker's CPU in a `perf` profile of batch-10 pop+ack); this one looks for `//`
//! first and rewrites only the paths that have it.

use actix_web::dev::ServiceRequest;
use actix_web::http::uri::{PathAndQuery, Uri};

/// Routes a path with doubled slashes as its merged path (called first by `front::front`).
pub fn merge(req: &mut ServiceRequest) {
    if req.path().contains("//") {
        if let Some(uri) = merged_uri(req.uri()) {
            req.match_info_mut().get_mut().update(&uri);
            req.head_mut().uri = uri;
        }
    }
}

/// `uri` with every run of slashes in its path made one; `None` when it cannot be rebuilt
/// (the request then goes on as it came, and no route matches it).
fn merged_uri(uri: &Uri) -> Option<Uri> {
    let mut path = String::with_capacity(uri.path().len());
    for c in uri.path().chars() {
        if !(c == '/' && path.ends_with('/')) {
            path.push(c);
        }
    }
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(PathAndQuery::try_from(path_and_query).ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::merged_uri;
    use actix_web::http::Uri;

    #[test]
    fn runs_of_slashes_become_one_and_the_query_stays() {
        let uri: Uri = "//api///v1//pop/queue/q?batch=2&x=a//b".parse().unwrap();
        let merged = merged_uri(&uri).expect("rebuilt");
        assert_eq!(merged.path(), "/api/v1/pop/queue/q");
        assert_eq!(merged.query(), Some("batch=2&x=a//b"));
        let trailing: Uri = "/health//".parse().unwrap();
        assert_eq!(merged_uri(&trailing).unwrap().path(), "/health/");
    }
}

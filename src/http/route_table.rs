//! The route tables read as text, for the tests that must cover every route (the OpenAPI
//! document, the access rules): a route added to a table and forgotten elsewhere fails them.

/// The route tables, as compiled.
pub const TABLES: [(&str, &str); 2] = [
    ("src/http/routes.rs", include_str!("routes.rs")),
    ("src/http/admin/mod.rs", include_str!("admin/mod.rs")),
];

/// The tables' own route builders, beside `web::<method>()`, with the method each takes
/// (`long_poll_get`: the long-polling routes' `GET` without actix's method guard).
const OWN_BUILDERS: [(&str, &str); 1] = [("long_poll_get()", "get")];

/// `(method, path)` of every `web::resource(..).route(web::<method>()..)` in a table (or
/// `.route(<one of OWN_BUILDERS>..)`).
pub fn registered(source: &str) -> Vec<(String, String)> {
    let mut routes = Vec::new();
    let blocks: Vec<&str> = source.split("web::resource(").skip(1).collect();
    for block in blocks {
        let head = block.split(')').next().unwrap_or_default();
        let paths: Vec<String> = head
            .split('"')
            .enumerate()
            .filter(|(i, _)| i % 2 == 1)
            .map(|(_, p)| p.to_owned())
            .collect();
        for method in ["get", "post", "put", "delete", "patch", "head"] {
            let own = OWN_BUILDERS
                .iter()
                .any(|(builder, m)| *m == method && block.contains(&format!(".route({builder}")));
            if own || block.contains(&format!(".route(web::{method}()")) {
                for path in &paths {
                    routes.push((method.to_owned(), path.clone()));
                }
            }
        }
    }
    routes
}

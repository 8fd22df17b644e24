//! Tables from rows: every experiment's tables are a name, a title, columns and one row of cells
//! per point (or per measure), built in one expression.

use trimlab_report::{Cell, Table};

/// The table `name` with `columns` and `rows`, in order. Rows are not checked against the
/// columns here: `trimlab_report` checks the shape when it writes the table.
pub fn table<R: IntoIterator<Item = Cell>>(
    name: &str,
    title: impl Into<String>,
    columns: &[&str],
    rows: impl IntoIterator<Item = R>,
) -> Table {
    let mut table = Table::new(name, title, columns);
    table.rows = rows.into_iter().map(|row| row.into_iter().collect()).collect();
    table
}

/// A yes/no cell as the sensitivity tables print it: "true" or "false".
pub fn flag(holds: bool) -> Cell {
    Cell::Text(holds.to_string())
}

pub mod rbac;
